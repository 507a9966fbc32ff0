'use strict'
// Secured scenario: KafkaJS with its defaults plus only the security settings (ssl
// with the test CA, sasl with a mechanism, username and password), run by
// internal/interop/security_clients_test.go as
//   node secured.js <bootstrap> <topic>
// with the settings in the environment:
//   RUNNEL_INTEROP_SASL_MECHANISM   PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's names)
//   RUNNEL_INTEROP_SASL_USERNAME, RUNNEL_INTEROP_SASL_PASSWORD
//   RUNNEL_INTEROP_SSL_CAFILE       the CA that signed the node's certificate (PEM)
//   RUNNEL_INTEROP_EXPECT           ok, or auth-failure (the password is wrong)
// ok: the admin client creates the topic, a producer sends 10 keyed records (acks
// all) to its one partition at offsets 0..9, a consumer group reads exactly them and
// commits, and the admin client reads the commit back. auth-failure: connecting fails
// with KafkaJSSASLAuthenticationError, KafkaJS's error for the broker's
// SASL_AUTHENTICATION_FAILED.

const fs = require('node:fs')
const { Kafka, logLevel, Partitioners } = require('kafkajs')
const { check, equal, setStep, log, run, consumeGroup, commitNext, expectedFromSend } = require('./lib')

const RECORDS = 10

function env(name) {
  const v = process.env[`RUNNEL_INTEROP_${name}`]
  if (v === undefined) throw new Error(`RUNNEL_INTEROP_${name} is not set`)
  return v
}

run('secured', async ({ brokers, topic }) => {
  const expect = env('EXPECT')
  const kafka = new Kafka({
    clientId: 'runnel-interop-secured',
    brokers,
    ssl: { ca: [fs.readFileSync(env('SSL_CAFILE'), 'utf-8')] },
    // KafkaJS spells the mechanisms in lower case.
    sasl: { mechanism: env('SASL_MECHANISM').toLowerCase(), username: env('SASL_USERNAME'), password: env('SASL_PASSWORD') },
    logLevel: expect === 'ok' ? logLevel.WARN : logLevel.NOTHING,
  })
  if (expect === 'auth-failure') {
    setStep('connect with a wrong password')
    const producer = kafka.producer()
    let err
    try {
      await producer.connect()
    } catch (e) {
      err = e
    }
    check(err !== undefined, 'producer.connect() succeeded with a wrong password')
    log(`connect failed: ${err.name}: ${err.message}`)
    equal(err.name, 'KafkaJSSASLAuthenticationError', `the error of connect() (${err.message})`)
    return
  }
  equal(expect, 'ok', 'RUNNEL_INTEROP_EXPECT')
  const admin = kafka.admin()
  await admin.connect()
  try {
    setStep('createTopics')
    equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true, timeout: 10000 }), true, 'createTopics')
    setStep('produce')
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    const messages = Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i}`, value: `secured ${i}` }))
    const result = await producer.send({ topic, acks: -1, messages })
    await producer.disconnect()
    const want = expectedFromSend(result, messages, () => 0)
    equal(want.map((r) => r.offset), [...Array(RECORDS).keys()], 'offsets of the produced records')
    setStep('consume')
    const groupId = `${topic}-group`
    const { consumer, got } = await consumeGroup(kafka, { groupId, topic, count: RECORDS })
    try {
      equal(got, want, 'records consumed')
      setStep('commit')
      await commitNext(consumer, topic, got)
    } finally {
      await consumer.disconnect()
    }
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
    equal(committed.map((t) => t.partitions.map((p) => [p.partition, p.offset])), [[[0, String(RECORDS)]]], 'committed offsets')
  } finally {
    await admin.disconnect()
  }
})
