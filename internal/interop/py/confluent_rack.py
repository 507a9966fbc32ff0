"""confluent-kafka (librdkafka) fetching from the closest replica (KIP-392).

Run by internal/interop/follower_fetch_test.go as

    python3 confluent_rack.py BOOTSTRAP TOPIC

against a 3-node cluster whose nodes have broker.rack r1, r2 and r3 and
replica.selector.class the rack-aware selector, with the environment variables
CLIENT_RACK (the consumer's client.rack), FIRST and TOTAL. The topic's one partition
holds FIRST records, record i's value starting with its offset as six digits. A
consumer with client.rack assigned at offset 0 must read exactly them; it then prints
"PHASE1 DONE" and waits for a line on its standard input, while the test checks which
node served the bytes, stops the follower of the consumer's rack and writes records up
to TOTAL. The rest must then be read exactly, from the leader, which no longer names
a replica that is down. librdkafka 2.1.0 and later go back to the leader as soon as
the preferred replica's connection fails, and the same consumer reads on; before
2.1.0 librdkafka keeps a preferred replica for 5 minutes even when it is down (its
"lease"), so a new consumer, as after a restart, reads the rest.
"""

import os
import sys

import lib
from confluent_kafka import Consumer, TopicPartition, libversion

# librdkafka's version number (0xMMmmrrpp) from which a consumer goes back to the
# leader when its preferred replica's connection fails (rd_kafka_broker_fail).
FALLS_BACK_AT_ONCE = 0x02010000


def conf(a, **kw):
    c = {"bootstrap.servers": a.bootstrap, "client.id": "runnel-interop-confluent-rack",
         "socket.timeout.ms": 10000, "error_cb": lambda err: lib.log("client error: %s" % err)}
    c.update({k.replace("_", "."): v for k, v in kw.items()})
    return c


def poll_records(consumer, topic):
    m = consumer.poll(0.2)
    if m is None:
        return []
    lib.check(m.error() is None, "poll: %s" % m.error())
    lib.equal(m.topic(), topic, "topic of a polled record")
    return [{"partition": m.partition(), "offset": m.offset(), "key": m.key(), "value": m.value()}]


def check_records(got, first, what):
    lib.check_contiguous(got, {0: first}, what)
    for r in got:
        want = b"%06d" % r["offset"]
        lib.check(r["value"].startswith(want), "%s: record at offset %d has value %r..., want it to start with %r"
                  % (what, r["offset"], r["value"][:12], want))


def new_consumer(a, rack, offset):
    consumer = Consumer(conf(a, group_id=a.topic + "-rack", client_rack=rack, enable_auto_commit=False,
                             fetch_wait_max_ms=100, reconnect_backoff_max_ms=1000))
    consumer.assign([TopicPartition(a.topic, 0, offset)])
    return consumer


def read_rest(a, consumer, first, total):
    rest = lib.poll_until(lambda: poll_records(consumer, a.topic), total - first, "phase 2", timeout_s=20.0)
    lib.equal(len(rest), total - first, "phase 2: records read")
    check_records(rest, first, "phase 2")


def scenario(a):
    rack, first, total = os.environ["CLIENT_RACK"], int(os.environ["FIRST"]), int(os.environ["TOTAL"])
    version, number = libversion()
    lib.step("consumer with client.rack=%s (librdkafka %s) reads %s[0] from offset 0" % (rack, version, a.topic))
    consumer = new_consumer(a, rack, 0)
    try:
        got = lib.poll_until(lambda: poll_records(consumer, a.topic), first, "phase 1")
        lib.equal(len(got), first, "phase 1: records read")
        check_records(got, 0, "phase 1")
        lib.log("PHASE1 DONE %d" % len(got))
        lib.step("waiting for the test to stop the follower of rack %s and write up to %d" % (rack, total))
        line = sys.stdin.readline()
        lib.check(line.strip() == "go", "standard input: %r, want go" % line)
        if number >= FALLS_BACK_AT_ONCE:
            lib.step("the consumer reads offsets %d..%d after its rack's follower stopped" % (first, total - 1))
            read_rest(a, consumer, first, total)
            return
    finally:
        consumer.close()
    lib.step("librdkafka %s keeps a preferred replica that is down for 5 minutes (2.1.0 goes back to the leader "
             "at once): a new consumer with client.rack=%s reads offsets %d..%d" % (version, rack, first, total - 1))
    consumer = new_consumer(a, rack, first)
    try:
        read_rest(a, consumer, first, total)
    finally:
        consumer.close()


if __name__ == "__main__":
    lib.run("confluent_rack", scenario)
