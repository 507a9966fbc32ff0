'use strict'
// Helpers shared by the KafkaJS scenarios. Each scenario is a script run as
//   node <script>.js <bootstrap> <topic>
// by internal/interop/kafkajs_test.go. It exits 0 once every check passed, and 1 with a
// message naming the first mismatch otherwise; KafkaJS's own warnings and errors go to
// the same output, so a failing Go test shows what the broker answered.

const util = require('node:util')
const { Kafka, logLevel } = require('kafkajs')

// Stops a scenario that hangs (a group that never forms, a fetch that never returns):
// the Go test has its own timeout, but this one says which step was running.
const SCRIPT_TIMEOUT_MS = 45000

// How long a consumer keeps listening after it has all the records it expects, to
// catch duplicates and records past the end.
const QUIET_MS = 700

let step = 'start'

// setStep names what the scenario is doing, for the failure message.
function setStep(s) {
  step = s
  log(`step: ${s}`)
}

function log(msg) {
  process.stdout.write(`[${new Date().toISOString()}] ${msg}\n`)
}

class Mismatch extends Error {}

// check fails the scenario with msg unless cond holds.
function check(cond, msg) {
  if (!cond) throw new Mismatch(msg)
}

// equal fails the scenario unless got and want are deeply equal (strict).
function equal(got, want, what) {
  if (!util.isDeepStrictEqual(got, want)) {
    throw new Mismatch(`${what}:\n  got  ${util.inspect(got, { depth: 6 })}\n  want ${util.inspect(want, { depth: 6 })}`)
  }
}

// args returns the bootstrap servers and the topic name from the command line.
function args() {
  const [bootstrap, topic] = process.argv.slice(2)
  if (!bootstrap || !topic) {
    process.stderr.write('usage: node <script>.js HOST:PORT[,HOST:PORT...] TOPIC\n')
    process.exit(2)
  }
  return { brokers: bootstrap.split(','), topic }
}

// newKafka is a KafkaJS client with short timeouts, so that a broker that does not
// answer fails the scenario in seconds rather than after KafkaJS's long defaults.
function newKafka(brokers, clientId) {
  return new Kafka({
    clientId,
    brokers,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 8 },
    logLevel: logLevel.WARN,
  })
}

// run runs the scenario and exits: 0 if it returned, 1 if it threw or overran.
function run(name, scenario) {
  const timer = setTimeout(() => {
    log(`FAIL ${name}: no result after ${SCRIPT_TIMEOUT_MS} ms (step: ${step})`)
    process.exit(1)
  }, SCRIPT_TIMEOUT_MS)
  scenario(args()).then(
    () => {
      clearTimeout(timer)
      log(`PASS ${name}`)
      process.exit(0)
    },
    (err) => {
      clearTimeout(timer)
      if (err instanceof Mismatch) {
        log(`FAIL ${name} (step: ${step}): ${err.message}`)
      } else {
        log(`FAIL ${name} (step: ${step}): ${err && err.stack ? err.stack : err}`)
        for (let e = err && err.cause; e; e = e.cause) log(`  caused by: ${e.stack || e}`)
        for (let e = err; e; e = e.cause) if (e.type) log(`  KafkaJS error type: ${e.type} (code ${e.code})`)
      }
      process.exit(1)
    },
  )
}

// record is the comparable form of a KafkaJS message: partition, offset, key, value
// and headers as strings. A header repeated under one key comes as an array.
function record(partition, m) {
  const headers = {}
  for (const [k, v] of Object.entries(m.headers || {})) {
    headers[k] = Array.isArray(v) ? v.map(String) : String(v)
  }
  return {
    partition,
    offset: Number(m.offset),
    key: m.key === null ? null : m.key.toString(),
    value: m.value === null ? null : m.value.toString(),
    headers,
  }
}

// byPosition orders records by partition, then offset.
function byPosition(a, b) {
  return a.partition - b.partition || a.offset - b.offset
}

// consumeGroup runs a consumer of groupId on topic until it has received `count`
// records, then listens QUIET_MS more for anything extra, and returns the consumer
// (still running, so the caller decides when to commit and disconnect) with the
// records in the order they arrived. With autoCommit off, nothing is committed unless
// the caller commits. `onMessage` sees each KafkaJS message as it comes (for what
// record() leaves out, such as the batch context).
async function consumeGroup(kafka, { groupId, topic, count, fromBeginning = true, onMessage, timeoutMs = 20000 }) {
  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 200,
    retry: { retries: 3 },
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning })
  const got = []
  const strays = [] // topics of records not of `topic`; checked below, as a throw here would only restart the consumer
  let enough
  const reached = new Promise((resolve) => (enough = resolve))
  if (count === 0) enough()
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic: t, partition, message }) => {
      if (t !== topic) strays.push(t)
      got.push(record(partition, message))
      if (onMessage) onMessage(partition, message)
      if (got.length === count) enough()
    },
  })
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Mismatch(`group ${groupId}: ${got.length} of ${count} records after ${timeoutMs} ms: ${util.inspect(got.map((r) => `${r.partition}@${r.offset}`))}`)),
      timeoutMs,
    )
  })
  try {
    await Promise.race([reached, late])
  } finally {
    clearTimeout(timer)
  }
  await sleep(QUIET_MS)
  check(strays.length === 0, `group ${groupId}: records of topics ${strays}, subscribed to ${topic} only`)
  log(`group ${groupId}: ${got.length} records, next offsets ${JSON.stringify(nextOffsets(got))}`)
  return { consumer, got }
}

// commitNext commits, for each partition, the offset after the last record in got.
async function commitNext(consumer, topic, got) {
  const next = nextOffsets(got)
  await consumer.commitOffsets(
    Object.entries(next).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) })),
  )
  return next
}

// nextOffsets maps each partition of records to the offset after its last record.
function nextOffsets(records) {
  const next = {}
  for (const r of records) next[r.partition] = Math.max(next[r.partition] ?? 0, r.offset + 1)
  return next
}

// expectedFromSend pairs the messages of one producer.send with where the broker put
// them: KafkaJS groups the messages by partition in their order, and the response
// gives each partition's base offset. partitionOf says which partition a message went
// to.
function expectedFromSend(result, messages, partitionOf) {
  const base = {}
  for (const r of result) {
    check(r.errorCode === 0, `produce to ${r.topicName}[${r.partition}]: error code ${r.errorCode}`)
    base[r.partition] = Number(r.baseOffset)
  }
  const next = {}
  return messages.map((m) => {
    const p = partitionOf(m)
    check(p in base, `no produce result for partition ${p}: ${util.inspect(result)}`)
    next[p] = next[p] ?? base[p]
    const headers = {}
    for (const [k, v] of Object.entries(m.headers || {})) headers[k] = String(v)
    return { partition: p, offset: next[p]++, key: m.key ?? null, value: m.value, headers }
  })
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

module.exports = {
  check,
  equal,
  setStep,
  log,
  newKafka,
  run,
  record,
  byPosition,
  consumeGroup,
  commitNext,
  nextOffsets,
  expectedFromSend,
  sleep,
}
