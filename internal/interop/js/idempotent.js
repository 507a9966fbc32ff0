'use strict'
// Idempotent producer scenario: a producer with idempotent: true and
// maxInFlightRequests 1 (InitProducerId, acks -1, sequence numbers) sends 5 batches to
// each of 2 partitions; every acknowledged offset follows the last one. A consumer in a
// group reads them back exactly, and each record's batch carries the producer id, an
// epoch and the sequence number it was sent with. A second idempotent producer gets
// another producer id, and its sequences start again at 0.

const { Partitioners } = require('kafkajs')
const { check, equal, setStep, log, newKafka, run, consumeGroup, expectedFromSend, byPosition } = require('./lib')

const ROUNDS = 5
const PER_PARTITION = 4

run('idempotent', async ({ brokers, topic }) => {
  const kafka = newKafka(brokers, 'runnel-interop-idempotent')
  const admin = kafka.admin()
  await admin.connect()
  try {
    setStep('createTopics')
    equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true, timeout: 10000 }), true, 'createTopics')
    const expected = []
    const producers = []
    for (const name of ['a', 'b']) {
      setStep(`idempotent producer ${name}`)
      const { records, seqs } = await produce(kafka, topic, name, expected)
      expected.push(...records)
      producers.push({ name, seqs })
    }
    await consume(kafka, topic, expected, producers)
  } finally {
    await admin.disconnect()
  }
})

// produce sends ROUNDS batches of PER_PARTITION records to each partition with one
// idempotent producer and returns the records where the broker acknowledged them, and
// for each record key the sequence number it was sent with.
// KafkaJS warns that limited retries may weaken exactly-once; they stay limited so that
// a broker that keeps refusing fails the scenario in seconds instead of never.
async function produce(kafka, topic, name, before) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const records = []
  const seqs = {}
  const next = { 0: 0, 1: 0 }
  for (const r of before) next[r.partition] = Math.max(next[r.partition], r.offset + 1)
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const messages = []
      for (const p of [0, 1]) {
        for (let i = 0; i < PER_PARTITION; i++) {
          const key = `${name}-p${p}-r${round}-${i}`
          seqs[key] = round * PER_PARTITION + i
          messages.push({ partition: p, key, value: `value of ${key}`, headers: { producer: name } })
        }
      }
      const res = await producer.send({ topic, acks: -1, messages })
      const acked = expectedFromSend(res, messages, (m) => m.partition)
      for (const r of acked) {
        check(r.offset === next[r.partition], `producer ${name} round ${round}: ${r.key} acknowledged at ${r.partition}@${r.offset}, want offset ${next[r.partition]}`)
        next[r.partition]++
      }
      records.push(...acked)
    }
  } finally {
    await producer.disconnect()
  }
  return { records, seqs }
}

async function consume(kafka, topic, expected, producers) {
  setStep('consume the idempotent records in a group')
  const batches = {} // record key -> its batch context and offset
  const { consumer, got } = await consumeGroup(kafka, {
    groupId: `${topic}-group`,
    topic,
    count: expected.length,
    onMessage: (partition, m) => {
      batches[m.key.toString()] = { offset: Number(m.offset), ...m.batchContext }
    },
  })
  await consumer.disconnect()
  equal([...got].sort(byPosition), [...expected].sort(byPosition), 'records of the idempotent producers')

  setStep('producer ids, epochs and sequence numbers')
  const ids = {}
  for (const { name, seqs } of producers) {
    for (const [key, seq] of Object.entries(seqs)) {
      const b = batches[key]
      check(Number(b.producerId) >= 0, `${key}: batch producer id ${b.producerId}, want an id >= 0`)
      check(b.producerEpoch >= 0, `${key}: batch producer epoch ${b.producerEpoch}, want >= 0`)
      ids[name] = ids[name] ?? b.producerId
      equal(b.producerId, ids[name], `producer id of ${key} (producer ${name})`)
      equal(b.firstSequence + (b.offset - Number(b.firstOffset)), seq, `sequence number of ${key}`)
    }
  }
  check(ids.a !== ids.b, `both idempotent producers got producer id ${ids.a}`)
  log(`producer ids: ${JSON.stringify(ids)}`)
}
