'use strict'
// Seek scenario: 20 records in one partition; a consumer of a new group that starts at
// the end (fromBeginning false) seeks to offset 12 and must get exactly 12..19; then,
// still running, it seeks back to 3 and must get exactly 3..19 again, in order.

const { Partitioners } = require('kafkajs')
const { check, equal, setStep, log, newKafka, run, record, sleep } = require('./lib')

const RECORDS = 20

run('seek', async ({ brokers, topic }) => {
  const kafka = newKafka(brokers, 'runnel-interop-seek')
  const admin = kafka.admin()
  await admin.connect()
  try {
    setStep('createTopics')
    equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true, timeout: 10000 }), true, 'createTopics')
    setStep('produce')
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    const messages = Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i}`, value: `v${i}` }))
    const res = await producer.send({ topic, acks: -1, messages })
    await producer.disconnect()
    equal(res.map((r) => [r.partition, r.errorCode, r.baseOffset]), [[0, 0, '0']], 'produce result')
    await seeks(kafka, topic)
  } finally {
    await admin.disconnect()
  }
})

async function seeks(kafka, topic) {
  const consumer = kafka.consumer({ groupId: `${topic}-group`, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: false })
  const got = []
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push(record(partition, message))
    },
  })
  try {
    setStep('seek to offset 12 from the end')
    consumer.seek({ topic, partition: 0, offset: '12' })
    await waitFor(got, RECORDS - 12)
    equal(got.splice(0), want(12), 'records after seeking to 12')

    setStep('seek back to offset 3 while running')
    consumer.seek({ topic, partition: 0, offset: '3' })
    await waitFor(got, RECORDS - 3)
    equal(got.splice(0), want(3), 'records after seeking back to 3')
  } finally {
    await consumer.disconnect()
  }
}

function want(from) {
  return Array.from({ length: RECORDS - from }, (_, j) => {
    const i = from + j
    return { partition: 0, offset: i, key: `k${i}`, value: `v${i}`, headers: {} }
  })
}

// waitFor waits until got holds n records (and then a little more, to catch extras),
// for at most 15 s.
async function waitFor(got, n) {
  for (const deadline = Date.now() + 15000; got.length < n; await sleep(50)) {
    check(Date.now() < deadline, `${got.length} of ${n} records after 15 s: offsets ${got.map((r) => r.offset)}`)
  }
  await sleep(700)
  log(`${got.length} records, offsets ${got[0].offset}..${got[got.length - 1].offset}`)
}
