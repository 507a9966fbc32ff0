"""confluent-kafka (librdkafka): asynchronous commits keep their order.

A consumer assigned TOPIC[0] commits offsets 1..50 asynchronously, one right after
another: librdkafka pipelines them on its coordinator connection. Every commit must
be acknowledged without error, in the order sent, and committed() must then read 50,
the last one sent, as it does on Kafka, where a connection's requests take effect in
the order sent. The topic exists already (the Go test creates it).
"""

import time

import lib
from confluent_kafka import Consumer, TopicPartition

COMMITS = 50


def scenario(a):
    acked = []

    def on_commit(err, partitions):
        if err is not None:
            raise lib.Mismatch("commit failed: %s" % err)
        for p in partitions:
            if p.error is not None:
                raise lib.Mismatch("commit of %s[%d] at %d failed: %s" % (p.topic, p.partition, p.offset, p.error))
            acked.append(p.offset)

    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.topic + "-async-commits",
                         "client.id": "runnel-interop-commit-order", "enable.auto.commit": False,
                         "on_commit": on_commit, "error_cb": lambda err: lib.log("client error: %s" % err)})
    try:
        tp = TopicPartition(a.topic, 0)
        consumer.assign([tp])
        lib.step("%d asynchronous commits of %s[0], offsets 1..%d" % (COMMITS, a.topic, COMMITS))
        for i in range(1, COMMITS + 1):
            consumer.commit(offsets=[TopicPartition(a.topic, 0, i)], asynchronous=True)
        deadline = time.monotonic() + 20.0
        while len(acked) < COMMITS:
            lib.check(time.monotonic() < deadline, "%d of %d commits acknowledged after 20 s" % (len(acked), COMMITS))
            consumer.poll(0.1)  # serves the on_commit callbacks
        lib.equal(acked, list(range(1, COMMITS + 1)), "offsets acknowledged, in order")
        lib.step("committed() of %s[0]" % a.topic)
        got = consumer.committed([tp], timeout=10)
        lib.equal(got[0].offset, COMMITS, "committed offset of %s[0] after %d asynchronous commits" % (a.topic, COMMITS))
    finally:
        consumer.close()


if __name__ == "__main__":
    lib.run("confluent_commit_order", scenario)
