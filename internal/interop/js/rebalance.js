'use strict'
// Rebalance scenario: two consumers of one group on a topic of 4 partitions. Once the
// group is stable with both (each got a disjoint share of the partitions, together all
// of them), records are written; each consumer gets exactly the records of its own
// partitions and commits them. Then one consumer leaves: the other is given every
// partition and, after more records are written, gets exactly the new ones, resuming
// the leaver's partitions at the leaver's committed offsets.

const { Partitioners } = require('kafkajs')
const lib = require('./lib')
const { check, equal, setStep, log, newKafka, run, record, expectedFromSend, byPosition, sleep } = lib

const PARTITIONS = 4

run('rebalance', async ({ brokers, topic }) => {
  const kafka = newKafka(brokers, 'runnel-interop-rebalance')
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const members = []
  try {
    setStep('createTopics')
    equal(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true, timeout: 10000 }), true, 'createTopics')
    await scenario(kafka, admin, producer, topic, members)
  } finally {
    for (const m of members) await m.consumer.disconnect()
    await producer.disconnect()
    await admin.disconnect()
  }
})

async function scenario(kafka, admin, producer, topic, members) {
  const groupId = `${topic}-group`
  setStep('two consumers join the group')
  for (const name of ['a', 'b']) members.push(await startMember(kafka, groupId, topic, name))
  await waitUntil('both members hold a disjoint share of all partitions', () => sharesCover(members, topic))
  const [a, b] = members
  log(`assignments: a ${a.assigned}, b ${b.assigned}`)

  setStep('describeGroups of the stable group')
  const { groups } = await admin.describeGroups([groupId])
  equal([groups[0].state, groups[0].members.length], ['Stable', 2], 'state and members of the group')

  setStep('produce to every partition')
  const first = await produce(producer, topic, 'one', 32)
  for (const m of members) {
    const mine = first.filter((r) => m.assigned.includes(r.partition)).sort(byPosition)
    await waitUntil(`member ${m.name} has the ${mine.length} records of partitions ${m.assigned}`, () => m.got.length >= mine.length)
  }
  await sleep(700)
  for (const m of members) {
    const mine = first.filter((r) => m.assigned.includes(r.partition)).sort(byPosition)
    equal([...m.got].sort(byPosition), mine, `records read by member ${m.name}`)
  }
  setStep('both members commit')
  for (const m of members) await lib.commitNext(m.consumer, topic, m.got.splice(0))

  setStep('member b leaves')
  await b.consumer.disconnect()
  members.pop()
  await waitUntil('member a holds every partition', () => equalSets(a.assigned, range(PARTITIONS)) && a.got.length === 0)
  log(`assignment of a after b left: ${a.assigned}`)

  setStep('produce again; member a gets exactly the new records')
  const second = await produce(producer, topic, 'two', 24)
  await waitUntil(`member a has the ${second.length} new records`, () => a.got.length >= second.length)
  await sleep(700)
  equal([...a.got].sort(byPosition), [...second].sort(byPosition), 'records read by member a after the rebalance')
}

// startMember runs a consumer of the group that records what it receives and its
// partitions as of the last join.
async function startMember(kafka, groupId, topic, name) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, rebalanceTimeout: 10000, heartbeatInterval: 300, maxWaitTimeInMs: 200 })
  const m = { name, consumer, got: [], assigned: [] }
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    m.assigned = [...(payload.memberAssignment[topic] ?? [])].sort((x, y) => x - y)
    log(`member ${name} joined: partitions ${m.assigned}, leader ${payload.isLeader}`)
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    // A record of a partition not assigned shows in the comparison with what was sent
    // to the member's partitions.
    eachMessage: async ({ partition, message }) => {
      m.got.push(record(partition, message))
    },
  })
  return m
}

function sharesCover(members, topic) {
  const all = members.flatMap((m) => m.assigned)
  return members.every((m) => m.assigned.length > 0) && all.length === PARTITIONS && equalSets(all, range(PARTITIONS))
}

async function produce(producer, topic, tag, n) {
  const messages = Array.from({ length: n }, (_, i) => ({ partition: i % PARTITIONS, key: `${tag}-${i}`, value: `${tag} ${i}` }))
  const res = await producer.send({ topic, acks: -1, messages })
  return expectedFromSend(res, messages, (m) => m.partition)
}

async function waitUntil(what, cond) {
  for (const deadline = Date.now() + 20000; !cond(); await sleep(50)) {
    check(Date.now() < deadline, `not within 20 s: ${what}`)
  }
}

function range(n) {
  return Array.from({ length: n }, (_, i) => i)
}

function equalSets(a, b) {
  const sa = [...a].sort((x, y) => x - y)
  const sb = [...b].sort((x, y) => x - y)
  return sa.length === sb.length && sa.every((x, i) => x === sb[i])
}
