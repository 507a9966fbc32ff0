'use strict'
// Produce and consumer-group scenario. A producer writes (acks -1) keyed records with
// headers uncompressed, gzip-compressed records to chosen partitions, and records with
// no key, to a topic of 3 partitions replicated on min(3, brokers) nodes. A consumer in
// a group reads everything back, exactly, and commits; then more records are written
// and a second consumer of the same group resumes after the committed offsets: it gets
// exactly the new records, no duplicates, no gaps. The group ends empty.

const { Partitioners, CompressionTypes } = require('kafkajs')
const lib = require('./lib')
const { check, equal, setStep, newKafka, run, consumeGroup, commitNext, expectedFromSend, byPosition } = lib

const PARTITIONS = 3

run('groups', async ({ brokers, topic }) => {
  const kafka = newKafka(brokers, 'runnel-interop-groups')
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  try {
    await scenario(kafka, admin, producer, topic)
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
})

async function scenario(kafka, admin, producer, topic) {
  setStep('createTopics')
  const { brokers } = await admin.describeCluster()
  const rf = Math.min(3, brokers.length)
  lib.log(`${brokers.length} brokers, replication factor ${rf}`)
  equal(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: rf }], waitForLeaders: true, timeout: 10000 }),
    true, 'createTopics')
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  for (const p of md.topics[0].partitions) {
    equal(p.replicas.length, rf, `replicas of partition ${p.partitionId}`)
    lib.log(`partition ${p.partitionId}: leader ${p.leader}, replicas ${p.replicas}, ISR ${p.isr}`)
  }

  await producer.connect()
  const partitionOf = partitionerOf(topic)
  const expected = []

  setStep('send keyed records with headers, no compression')
  const keyed = []
  for (let i = 0; i < 24; i++) {
    keyed.push({ key: `k${i % 5}`, value: `plain-${i}`, headers: { idx: String(i), src: 'kafkajs' } })
  }
  const r1 = await producer.send({ topic, acks: -1, compression: CompressionTypes.None, messages: keyed })
  expected.push(...expectedFromSend(r1, keyed, partitionOf))
  checkKeyAffinity(expected)

  setStep('send gzip records to chosen partitions')
  const gz = []
  for (let i = 0; i < 15; i++) {
    gz.push({ partition: i % PARTITIONS, key: `g${i}`, value: `gzip-${i}-${'x'.repeat(200)}`, headers: { codec: 'gzip' } })
  }
  const r2 = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: gz })
  expected.push(...expectedFromSend(r2, gz, partitionOf))

  setStep('send records without key')
  const nokey = [0, 1, 2, 3].map((i) => ({ partition: 2, value: `nokey-${i}` }))
  const r3 = await producer.send({ topic, acks: -1, messages: nokey })
  expected.push(...expectedFromSend(r3, nokey, partitionOf))
  checkContiguous(expected)

  setStep('fetchTopicOffsets after the first sends')
  const ends = endsOf(expected)
  equal(await highs(admin, topic), ends, 'high watermarks after the first sends')

  const groupId = `${topic}-group`
  setStep('first consumer of the group reads everything')
  const first = await consumeGroup(kafka, { groupId, topic, count: expected.length })
  checkArrivalOrder(first.got)
  equal([...first.got].sort(byPosition), [...expected].sort(byPosition), 'records read by the first consumer')
  setStep('first consumer commits')
  equal(await commitNext(first.consumer, topic, first.got), ends, 'offsets committed by the first consumer')
  await first.consumer.disconnect()
  equal(await committed(admin, groupId, topic), ends, 'committed offsets after the first consumer')

  // gzip again, so that the resumed consumer decompresses too.
  setStep('send more records while the group is empty')
  const more = []
  for (let i = 0; i < 18; i++) more.push({ key: `m${i % 7}`, value: `more-${i}`, headers: { idx: String(100 + i) } })
  const r4 = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: more })
  const expectedMore = expectedFromSend(r4, more, partitionOf)
  checkContiguous([...expected, ...expectedMore])

  setStep('second consumer of the group resumes after the committed offsets')
  const second = await consumeGroup(kafka, { groupId, topic, count: expectedMore.length })
  checkArrivalOrder(second.got)
  equal([...second.got].sort(byPosition), [...expectedMore].sort(byPosition), 'records read by the second consumer')
  const allEnds = endsOf([...expected, ...expectedMore])
  equal(await commitNext(second.consumer, topic, second.got), pick(allEnds, second.got), 'offsets committed by the second consumer')
  await second.consumer.disconnect()
  equal(await committed(admin, groupId, topic), allEnds, 'committed offsets after the second consumer')
  equal(await highs(admin, topic), allEnds, 'high watermarks at the end')

  setStep('describeGroups')
  const { groups } = await admin.describeGroups([groupId])
  equal(groups.map((g) => [g.groupId, g.errorCode, g.state, g.protocolType, g.members.length]), [[groupId, 0, 'Empty', 'consumer', 0]],
    'describeGroups after both consumers left (group, error, state, protocol type, members)')
}

// partitionerOf returns where KafkaJS's default (murmur2, as Java's) partitioner puts a
// message of topic: its explicit partition, else by its key.
function partitionerOf(topic) {
  const partitioner = Partitioners.DefaultPartitioner()
  const partitionMetadata = Array.from({ length: PARTITIONS }, (_, i) => ({ partitionId: i, leader: 0 }))
  return (m) => m.partition ?? partitioner({ topic, partitionMetadata, message: m })
}

function checkKeyAffinity(records) {
  const at = {}
  for (const r of records) {
    if (r.key === null) continue
    at[r.key] = at[r.key] ?? r.partition
    check(at[r.key] === r.partition, `key ${r.key} in partitions ${at[r.key]} and ${r.partition}`)
  }
}

// checkContiguous fails unless each partition's expected offsets are 0, 1, 2, ...
function checkContiguous(records) {
  const next = {}
  for (const r of [...records].sort(byPosition)) {
    const want = next[r.partition] ?? 0
    check(r.offset === want, `partition ${r.partition}: produce acknowledged offset ${r.offset}, want ${want}`)
    next[r.partition] = want + 1
  }
}

// checkArrivalOrder fails unless each partition's records came in offset order.
function checkArrivalOrder(got) {
  const last = {}
  for (const r of got) {
    check(!(r.partition in last) || r.offset === last[r.partition] + 1,
      `partition ${r.partition}: offset ${r.offset} arrived after ${last[r.partition]}`)
    last[r.partition] = r.offset
  }
}

// endsOf maps every partition of the topic to the offset after its last record.
function endsOf(records) {
  const ends = Object.fromEntries(Array.from({ length: PARTITIONS }, (_, p) => [p, 0]))
  return { ...ends, ...lib.nextOffsets(records) }
}

function pick(ends, records) {
  return Object.fromEntries(Object.keys(lib.nextOffsets(records)).map((p) => [p, ends[p]]))
}

async function highs(admin, topic) {
  return Object.fromEntries((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]))
}

async function committed(admin, groupId, topic) {
  const res = await admin.fetchOffsets({ groupId, topics: [topic] })
  equal(res.map((t) => t.topic), [topic], 'topics of fetchOffsets')
  return Object.fromEntries(res[0].partitions.map((p) => [p.partition, Number(p.offset)]))
}
