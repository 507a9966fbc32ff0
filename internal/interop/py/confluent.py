"""confluent-kafka (librdkafka) scenario.

AdminClient creates the topic (3 partitions, the given replication factor, a
retention.ms of its own) and describe_configs must show that value as a dynamic topic
config and cleanup.policy at its default. An idempotent Producer sends 5000 keyed
records; every delivery report must be free of errors, with each partition's offsets
contiguous from 0 in send order. A transactional producer then runs three
transactions: 50 records committed, 100 aborted (flushed to the log first, so the
broker really holds them), 50 committed; each transaction's records follow the
previous one's control marker in every partition it touched. A read_committed
Consumer in a group must see exactly the 5000 + 100 committed records and none of the
aborted ones, commit, and read its commits back with committed(). A consumer that
assigns one partition at a middle offset must read exactly the records from there,
and after a seek into the aborted transaction, exactly the committed records past it.
"""

import lib
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition, TIMESTAMP_CREATE_TIME
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

PARTITIONS = 3
IDEMPOTENT = 5000
RETENTION_MS = "86400000"

# (name, records, committed): the transactions, in order.
TRANSACTIONS = [("txn-a", 50, True), ("txn-b", 100, False), ("txn-c", 50, True)]


def conf(a, **kw):
    c = {"bootstrap.servers": a.bootstrap, "client.id": "runnel-interop-confluent-kafka",
         "socket.timeout.ms": 10000, "error_cb": lambda err: lib.log("client error: %s" % err)}
    c.update({k.replace("_", "."): v for k, v in kw.items()})
    return c


def scenario(a):
    create_topic(a)
    layout = Layout()
    produce_idempotent(a, layout)
    produce_transactions(a, layout)
    lib.log("end offsets: %r" % layout.next)
    consume_group(a, layout)
    assign_and_seek(a, layout)


class Layout:
    """Where the records went: the expected log of each partition."""

    def __init__(self):
        self.visible = []  # every committed record, in send order: dicts of partition, offset, key, value
        self.aborted = []  # the records of the aborted transaction
        self.next = {}  # partition -> the offset the next record (or control marker) gets
        self.txn_first = {}  # (transaction name, partition) -> offset of its first record there

    def add(self, reports, what, txn=None, committed=True):
        """Checks that each partition's reports continue at self.next, in send order,
        and records them; a transaction's control marker then takes one offset in
        every partition it touched."""
        self.next = lib.check_contiguous(reports, self.next, what)
        for r in reports:
            if txn is not None:
                self.txn_first.setdefault((txn, r["partition"]), r["offset"])
            (self.visible if committed else self.aborted).append(r)
        if txn is not None:
            for p in {r["partition"] for r in reports}:
                self.next[p] += 1

    def expected(self, partition=None, start=0):
        rs = sorted(self.visible, key=lambda r: (r["partition"], r["offset"]))
        return [r for r in rs if (partition is None or r["partition"] == partition) and r["offset"] >= start]


def create_topic(a):
    admin = AdminClient(conf(a))
    lib.step("create_topics %s partitions=%d rf=%d" % (a.topic, PARTITIONS, a.rf))
    futures = admin.create_topics([NewTopic(a.topic, num_partitions=PARTITIONS, replication_factor=a.rf,
                                            config={"retention.ms": RETENTION_MS})], operation_timeout=10, request_timeout=15)
    lib.equal(futures[a.topic].result(timeout=15), None, "create_topics result")

    lib.step("describe_configs topic %s" % a.topic)
    res = ConfigResource(ConfigResource.Type.TOPIC, a.topic)
    entries = admin.describe_configs([res], request_timeout=15)[res].result(timeout=15)
    got = {k: (entries[k].value, entries[k].source) for k in ("retention.ms", "cleanup.policy") if k in entries}
    lib.equal(got, {"retention.ms": (RETENTION_MS, ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
                    "cleanup.policy": ("delete", ConfigSource.DEFAULT_CONFIG.value)},
              "describe_configs(%s): (value, source)" % a.topic)


def record(prefix, i):
    key = "%s-%05d" % (prefix, i)
    return {"key": key.encode(), "value": ("value of %s" % key).encode()}


def send(producer, topic, recs, reports):
    """Produces recs; each delivery report fills in its record's partition and offset
    (or its error), and is appended to reports."""
    def on_delivery(r):
        def cb(err, msg):
            r["error"] = err
            if err is None:
                r["partition"], r["offset"] = msg.partition(), msg.offset()
            reports.append(r)
        return cb
    for r in recs:
        while True:
            try:
                producer.produce(topic, key=r["key"], value=r["value"], on_delivery=on_delivery(r))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)


def delivered(recs, reports, what):
    """Fails unless every record got one error-free delivery report."""
    lib.equal(len(reports), len(recs), what + ": delivery reports")
    for r in recs:
        lib.check(r.get("error", "no report") is None, "%s: delivery of %r: %s" % (what, r["key"], r.get("error", "no report")))
    return [{k: r[k] for k in ("partition", "offset", "key", "value")} for r in recs]


def produce_idempotent(a, layout):
    lib.step("idempotent producer: %d records" % IDEMPOTENT)
    producer = Producer(conf(a, enable_idempotence=True, linger_ms=5, message_timeout_ms=20000))
    recs, reports = [record("idem", i) for i in range(IDEMPOTENT)], []
    send(producer, a.topic, recs, reports)
    lib.equal(producer.flush(20), 0, "idempotent producer: records not delivered after flush")
    layout.add(delivered(recs, reports, "idempotent producer"), "idempotent producer")
    lib.equal(sorted(layout.next), list(range(PARTITIONS)), "partitions that got idempotent records")


def produce_transactions(a, layout):
    producer = Producer(conf(a, transactional_id=a.topic + "-txn", linger_ms=5, message_timeout_ms=20000))
    lib.step("init_transactions")
    producer.init_transactions(15)
    for name, n, commit in TRANSACTIONS:
        lib.step("transaction %s: %d records, then %s" % (name, n, "commit" if commit else "abort"))
        producer.begin_transaction()
        recs, reports = [record(name, i) for i in range(n)], []
        send(producer, a.topic, recs, reports)
        # Flushed before the end either way, so that the aborted records are in the log.
        lib.equal(producer.flush(15), 0, "transaction %s: records not delivered after flush" % name)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
        layout.add(delivered(recs, reports, "transaction " + name), "transaction " + name, name, commit)


def poll_records(consumer, topic):
    """The record of one poll (or none), checked for errors, topic and timestamp type."""
    m = consumer.poll(0.2)
    if m is None:
        return []
    lib.check(m.error() is None, "poll: %s" % m.error())
    lib.equal(m.topic(), topic, "topic of a polled record")
    lib.equal(m.timestamp()[0], TIMESTAMP_CREATE_TIME, "timestamp type of %d@%d" % (m.partition(), m.offset()))
    return [{"partition": m.partition(), "offset": m.offset(), "key": m.key(), "value": m.value()}]


def consume_group(a, layout):
    group = a.topic + "-group"
    lib.step("read_committed consumer in group %s" % group)
    consumer = Consumer(conf(a, group_id=group, isolation_level="read_committed", auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=500,
                             fetch_wait_max_ms=100))
    try:
        consumer.subscribe([a.topic])
        want = layout.expected()
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), len(want), "group " + group)
        aborted = {r["key"] for r in layout.aborted}
        seen = [r for r in got if r["key"] in aborted]
        lib.check(not seen, "group %s: read_committed consumer got %d aborted records, the first %r" % (group, len(seen), seen[:1]))
        lib.diff_records(sorted(got, key=lambda r: (r["partition"], r["offset"])), want, "group " + group)

        lib.step("commit in group %s, read it back with committed()" % group)
        tps = [TopicPartition(a.topic, p) for p in range(PARTITIONS)]
        # Every partition ends with a transaction's control marker, and librdkafka's
        # position moves past the control records it fetches (the quiet polls above
        # gave it time to): the commit is each partition's end offset.
        want_commit = [(a.topic, p, layout.next[p]) for p in range(PARTITIONS)]
        done = consumer.commit(asynchronous=False)
        lib.equal(sorted((tp.topic, tp.partition, tp.offset) for tp in done), want_commit, "commit() result")
        lib.equal([(tp.topic, tp.partition, tp.offset, tp.error) for tp in consumer.committed(tps, timeout=10)],
                  [w + (None,) for w in want_commit], "committed()")
        for tp in tps:
            lib.equal(consumer.get_watermark_offsets(tp, timeout=10), (0, layout.next[tp.partition]),
                      "get_watermark_offsets(%s[%d])" % (a.topic, tp.partition))
    finally:
        consumer.close()


def assign_and_seek(a, layout):
    # A partition that both the aborted transaction and the last committed one touched.
    p = min(q for q in range(PARTITIONS) if ("txn-b", q) in layout.txn_first and ("txn-c", q) in layout.txn_first)
    start = layout.next[p] // 3
    lib.step("assign %s[%d] at offset %d" % (a.topic, p, start))
    consumer = Consumer(conf(a, group_id=a.topic + "-seek", isolation_level="read_committed",
                             enable_auto_commit=False, fetch_wait_max_ms=100))
    try:
        consumer.assign([TopicPartition(a.topic, p, start)])
        want = layout.expected(p, start)
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), len(want), "%s[%d] from offset %d" % (a.topic, p, start))
        lib.diff_records(got, want, "%s[%d] from offset %d" % (a.topic, p, start))

        aborted_at = layout.txn_first[("txn-b", p)]
        lib.step("seek %s[%d] to offset %d, the aborted transaction's first record" % (a.topic, p, aborted_at))
        consumer.seek(TopicPartition(a.topic, p, aborted_at))
        want = layout.expected(p, aborted_at)
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), len(want), "%s[%d] from offset %d" % (a.topic, p, aborted_at))
        lib.diff_records(got, want, "%s[%d] from offset %d" % (a.topic, p, aborted_at))
    finally:
        consumer.close()


if __name__ == "__main__":
    lib.run("confluent_kafka", scenario)
