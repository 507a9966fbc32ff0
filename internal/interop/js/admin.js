'use strict'
// Admin scenario: createTopics (and again, which KafkaJS reports as false),
// listTopics, fetchTopicMetadata, describeCluster, fetchTopicOffsets on an empty and a
// written topic, fetchTopicOffsetsByTimestamp before, between and after the records'
// timestamps, deleteTopics, and metadata of the deleted topic.

const { Partitioners } = require('kafkajs')
const { check, equal, setStep, newKafka, run, sleep } = require('./lib')

run('admin', async ({ brokers, topic }) => {
  const kafka = newKafka(brokers, 'runnel-interop-admin')
  const admin = kafka.admin()
  await admin.connect()
  try {
    await scenario(kafka, admin, topic)
  } finally {
    await admin.disconnect()
  }
})

async function scenario(kafka, admin, topic) {
  setStep('describeCluster')
  const cluster = await admin.describeCluster()
  const brokerIDs = cluster.brokers.map((b) => b.nodeId).sort()
  check(brokerIDs.length >= 1, `describeCluster: no brokers: ${JSON.stringify(cluster)}`)
  check(brokerIDs.includes(cluster.controller), `describeCluster: controller ${cluster.controller} is not among the brokers ${brokerIDs}`)

  setStep('createTopics')
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
    waitForLeaders: true,
    timeout: 10000,
  })
  equal(created, true, 'createTopics of a new topic')
  setStep('createTopics of an existing topic')
  equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], timeout: 10000 }), false,
    'createTopics of an existing topic (TOPIC_ALREADY_EXISTS becomes false)')

  setStep('listTopics')
  check((await admin.listTopics()).includes(topic), `listTopics does not list ${topic}`)

  setStep('fetchTopicMetadata')
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  equal(md.topics.length, 1, 'fetchTopicMetadata topics')
  equal(md.topics[0].name, topic, 'fetchTopicMetadata topic name')
  const parts = [...md.topics[0].partitions].sort((a, b) => a.partitionId - b.partitionId)
  equal(parts.map((p) => p.partitionId), [0, 1, 2], 'fetchTopicMetadata partition ids')
  for (const p of parts) {
    equal(p.partitionErrorCode, 0, `partition ${p.partitionId} error code`)
    check(brokerIDs.includes(p.leader), `partition ${p.partitionId}: leader ${p.leader} is not a broker (${brokerIDs})`)
    equal(p.replicas.length, 1, `partition ${p.partitionId} replicas`)
    equal(p.isr, p.replicas, `partition ${p.partitionId} ISR`)
    check(p.replicas.includes(p.leader), `partition ${p.partitionId}: leader ${p.leader} not among replicas ${p.replicas}`)
  }

  setStep('fetchTopicOffsets of the empty topic')
  equal(sortOffsets(await admin.fetchTopicOffsets(topic)), [0, 1, 2].map((p) => ({ partition: p, offset: '0', high: '0', low: '0' })),
    'fetchTopicOffsets of the empty topic')

  // Records an hour old, a minute apart: 5 in partition 0, 3 in partition 1, none in 2.
  setStep('produce records with timestamps')
  const base = Date.now() - 3600 * 1000
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const messages = []
  for (let i = 0; i < 5; i++) messages.push({ partition: 0, value: `p0-${i}`, timestamp: String(base + i * 60000) })
  for (let i = 0; i < 3; i++) messages.push({ partition: 1, value: `p1-${i}`, timestamp: String(base + i * 60000) })
  const sent = await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  equal(sent.map((r) => [r.partition, r.errorCode, r.baseOffset]).sort(), [[0, 0, '0'], [1, 0, '0']], 'produce results (partition, error, base offset)')

  setStep('fetchTopicOffsets of the written topic')
  equal(sortOffsets(await admin.fetchTopicOffsets(topic)), [
    { partition: 0, offset: '5', high: '5', low: '0' },
    { partition: 1, offset: '3', high: '3', low: '0' },
    { partition: 2, offset: '0', high: '0', low: '0' },
  ], 'fetchTopicOffsets after writing')

  // KafkaJS turns "no record at or after the time" (-1) into the high watermark.
  const byTime = async (ts) => sortOffsets(await admin.fetchTopicOffsetsByTimestamp(topic, ts))
  setStep('fetchTopicOffsetsByTimestamp')
  equal(await byTime(base - 1), [{ partition: 0, offset: '0' }, { partition: 1, offset: '0' }, { partition: 2, offset: '0' }],
    'offsets by a timestamp before every record')
  equal(await byTime(base + 60000), [{ partition: 0, offset: '1' }, { partition: 1, offset: '1' }, { partition: 2, offset: '0' }],
    'offsets by the timestamp of record 1')
  equal(await byTime(base + 150000), [{ partition: 0, offset: '3' }, { partition: 1, offset: '3' }, { partition: 2, offset: '0' }],
    'offsets by a timestamp between records 2 and 3')
  equal(await byTime(Date.now() + 60000), [{ partition: 0, offset: '5' }, { partition: 1, offset: '3' }, { partition: 2, offset: '0' }],
    'offsets by a timestamp after every record')

  setStep('deleteTopics')
  await admin.deleteTopics({ topics: [topic], timeout: 10000 })
  let listed = true
  for (let deadline = Date.now() + 5000; Date.now() < deadline; await sleep(100)) {
    listed = (await admin.listTopics()).includes(topic)
    if (!listed) break
  }
  check(!listed, `listTopics still lists ${topic} 5 s after deleteTopics`)

  // The admin client asks with allowAutoTopicCreation=false, so the topic stays gone.
  setStep('fetchTopicMetadata of the deleted topic')
  let err
  try {
    await admin.fetchTopicMetadata({ topics: [topic] })
  } catch (e) {
    err = e
  }
  check(err !== undefined, `fetchTopicMetadata of the deleted topic ${topic} succeeded`)
  equal(err.type, 'UNKNOWN_TOPIC_OR_PARTITION', `error of fetchTopicMetadata of the deleted topic (${err.message})`)
  // KafkaJS retries UNKNOWN_TOPIC_OR_PARTITION; an admin without retries sees it at once.
  setStep('deleteTopics of the deleted topic')
  const once = kafka.admin({ retry: { retries: 0 } })
  await once.connect()
  let delErr
  try {
    await once.deleteTopics({ topics: [topic], timeout: 5000 })
  } catch (e) {
    delErr = e
  } finally {
    await once.disconnect()
  }
  check(delErr !== undefined, 'deleteTopics of an already deleted topic succeeded')
  const cause = delErr.cause ?? delErr // KafkaJSNumberOfRetriesExceeded wraps the protocol error
  equal(cause.type, 'UNKNOWN_TOPIC_OR_PARTITION', `error of deleteTopics of the deleted topic (${delErr.message})`)
}

function sortOffsets(list) {
  return [...list].sort((a, b) => a.partition - b.partition)
}
