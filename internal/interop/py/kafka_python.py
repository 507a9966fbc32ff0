"""kafka-python scenario.

KafkaAdminClient creates the topic (3 partitions, the given replication factor). A
KafkaProducer with acks=all sends 1000 keyed records with headers and explicit
timestamps; every future's metadata must give offsets contiguous from 0 in each
partition, in send order. A KafkaConsumer in a group (earliest, manual commit) reads
them back exactly, commits, and its committed offsets must equal the end offsets.
beginning_offsets, end_offsets and offsets_for_times must give the exact offsets the
records sit at. A consumer without a group assigns partition 0, seeks to the
beginning, then to a middle offset, and must read exactly the records from there.
Finally the admin client must list the group and its committed offsets.

kafka-python logs "Fetch to node N failed: Cancelled" when a consumer closes with a
fetch in flight: that is its own shutdown, not an answer from the broker.
"""

import time

import lib
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp

COUNT = 1000
PARTITIONS = 3
CLIENT_ID = "runnel-interop-kafka-python"


def scenario(a):
    admin = KafkaAdminClient(bootstrap_servers=a.brokers, client_id=CLIENT_ID, request_timeout_ms=10000)
    try:
        create_topic(admin, a)
        sent = produce(a)
        expected = lib.by_partition(sorted(sent, key=lambda r: (r["partition"], r["offset"])))
        group = a.topic + "-group"
        consume_group(a, group, sent, expected)
        list_offsets_and_seek(a, expected)
        check_group_admin(admin, a, group, expected)
    finally:
        admin.close()


def create_topic(admin, a):
    lib.step("create_topics %s partitions=%d rf=%d" % (a.topic, PARTITIONS, a.rf))
    resp = admin.create_topics([NewTopic(a.topic, PARTITIONS, a.rf)], timeout_ms=10000)
    # topic_errors entries are (topic, error_code[, error_message]) depending on the version.
    lib.equal([tuple(e[:2]) for e in resp.topic_errors], [(a.topic, 0)], "create_topics topic errors")


def record(i, base_ts):
    key = "key-%04d" % i
    return {"key": key.encode(), "value": ("value of %s" % key).encode(),
            "headers": [("index", str(i).encode()), ("client", b"kafka-python")], "timestamp": base_ts + 10 * i}


def produce(a):
    """Sends COUNT records and returns them with the partition and offset the broker
    acknowledged, in send order."""
    lib.step("produce %d records acks=all" % COUNT)
    # One request in flight per broker with retries: a retried batch cannot overtake
    # the next one, so the offsets of a partition follow the send order.
    producer = KafkaProducer(bootstrap_servers=a.brokers, client_id=CLIENT_ID, acks="all", retries=5,
                             max_in_flight_requests_per_connection=1, linger_ms=5, request_timeout_ms=10000,
                             max_block_ms=15000)
    try:
        # Timestamps an hour back, 10 ms apart, so offsets_for_times has exact answers.
        base_ts = int(time.time() * 1000) - 3600 * 1000
        recs = [record(i, base_ts) for i in range(COUNT)]
        futures = [producer.send(a.topic, key=r["key"], value=r["value"], headers=r["headers"],
                                 timestamp_ms=r["timestamp"]) for r in recs]
        producer.flush(timeout=20)
        for r, f in zip(recs, futures):
            md = f.get(timeout=10)
            lib.equal((md.topic, md.timestamp), (a.topic, r["timestamp"]), "metadata of %r: topic, timestamp" % r["key"])
            r["partition"], r["offset"] = md.partition, md.offset
    finally:
        producer.close(timeout=10)
    nxt = lib.check_contiguous(recs, {}, "kafka-python produce")
    lib.equal(sorted(nxt), list(range(PARTITIONS)), "partitions that got records")
    lib.log("produced, records per partition: %r" % nxt)
    return recs


def comparable(cr):
    """The fields of a kafka-python ConsumerRecord that a record dict holds."""
    return {"key": cr.key, "value": cr.value, "headers": list(cr.headers), "timestamp": cr.timestamp,
            "partition": cr.partition, "offset": cr.offset}


def poll_records(consumer, topic):
    """One poll's records in partition order (kafka-python returns a dict of
    partition -> records)."""
    out = []
    for tp, crs in sorted(consumer.poll(timeout_ms=200).items()):
        lib.equal(tp.topic, topic, "topic of a polled record")
        for cr in crs:
            lib.equal(cr.timestamp_type, 0, "timestamp type (CreateTime) of offset %d in partition %d" % (cr.offset, cr.partition))
            out.append(comparable(cr))
    return out


def consume_group(a, group, sent, expected):
    lib.step("consume in group %s" % group)
    consumer = KafkaConsumer(a.topic, bootstrap_servers=a.brokers, client_id=CLIENT_ID, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=10000,
                             heartbeat_interval_ms=500, request_timeout_ms=15000, fetch_max_wait_ms=200)
    try:
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), COUNT, "group " + group)
        got_by_partition = lib.by_partition(got)
        for p in range(PARTITIONS):
            lib.diff_records(got_by_partition.get(p, []), expected[p], "group %s partition %d" % (group, p))

        lib.step("commit in group %s and compare with the end offsets" % group)
        consumer.commit()
        tps = [TopicPartition(a.topic, p) for p in range(PARTITIONS)]
        ends = {tp: len(expected[tp.partition]) for tp in tps}
        lib.equal({tp: consumer.committed(tp) for tp in tps}, ends, "committed offsets of group " + group)
        lib.equal(consumer.end_offsets(tps), ends, "end_offsets")
    finally:
        consumer.close()


def list_offsets_and_seek(a, expected):
    consumer = KafkaConsumer(bootstrap_servers=a.brokers, client_id=CLIENT_ID, group_id=None,
                             enable_auto_commit=False, request_timeout_ms=15000, fetch_max_wait_ms=200)
    try:
        tps = [TopicPartition(a.topic, p) for p in range(PARTITIONS)]
        lib.step("beginning_offsets and offsets_for_times")
        lib.equal(consumer.beginning_offsets(tps), {tp: 0 for tp in tps}, "beginning_offsets")
        # Just below the timestamp of each partition's middle record: that record is the
        # first at or after it. Before every record: offset 0. After every record: none.
        want, query = {}, {}
        for tp in tps:
            mid = expected[tp.partition][len(expected[tp.partition]) // 2]
            query[tp] = mid["timestamp"] - 1
            want[tp] = OffsetAndTimestamp(mid["offset"], mid["timestamp"])
        lib.equal(consumer.offsets_for_times(query), want, "offsets_for_times(middle record's timestamp - 1)")
        first = expected[0][0]
        lib.equal(consumer.offsets_for_times({tps[0]: first["timestamp"] - 1000}),
                  {tps[0]: OffsetAndTimestamp(0, first["timestamp"])}, "offsets_for_times(before every record)")
        last = expected[0][-1]
        lib.equal(consumer.offsets_for_times({tps[0]: last["timestamp"] + 1}), {tps[0]: None},
                  "offsets_for_times(after every record)")

        tp0, want0 = tps[0], expected[0]
        lib.step("assign partition 0, seek_to_beginning")
        consumer.assign([tp0])
        consumer.seek_to_beginning(tp0)
        lib.equal(consumer.position(tp0), 0, "position after seek_to_beginning")
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), len(want0), "partition 0 from the beginning")
        lib.diff_records(got, want0, "partition 0 from the beginning")

        mid = len(want0) // 2
        lib.step("seek partition 0 to offset %d" % mid)
        consumer.seek(tp0, mid)
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), len(want0) - mid, "partition 0 from offset %d" % mid)
        lib.diff_records(got, want0[mid:], "partition 0 from offset %d" % mid)
        lib.equal(consumer.position(tp0), len(want0), "position after reading partition 0 to its end")
    finally:
        consumer.close()


def check_group_admin(admin, a, group, expected):
    lib.step("list_consumer_groups")
    groups = admin.list_consumer_groups()
    lib.check((group, "consumer") in groups, "list_consumer_groups: (%r, 'consumer') missing from %r" % (group, groups))
    lib.step("list_consumer_group_offsets %s" % group)
    want = {TopicPartition(a.topic, p): OffsetAndMetadata(len(rs), "") for p, rs in expected.items()}
    lib.equal(admin.list_consumer_group_offsets(group), want, "list_consumer_group_offsets(%s)" % group)


if __name__ == "__main__":
    lib.run("kafka_python", scenario)
