"""A librdkafka producer with default settings, for TestClientFailoverReport.

    python3 librdkafka_producer.py BOOTSTRAP TOPIC RECORDS_PER_SECOND

Produces keyed records (30 keys, so every partition gets some) at the given rate with
confluent-kafka's Producer configured with bootstrap.servers only, until its stdin is
closed. Each delivery report is one line on stdout:

    ack PARTITION UNIX_SECONDS      a record was acknowledged
    err PARTITION UNIX_SECONDS MSG  a record failed

The first line is "ready LIBRDKAFKA_VERSION".
"""

import sys
import threading
import time

from confluent_kafka import Producer, libversion


def main():
    bootstrap, topic, rate = sys.argv[1], sys.argv[2], int(sys.argv[3])
    p = Producer({"bootstrap.servers": bootstrap})
    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def report(err, msg):
        now = time.time()
        if err is not None:
            sys.stdout.write("err %d %.6f %s\n" % (msg.partition(), now, err.str().replace("\n", " ")))
        else:
            sys.stdout.write("ack %d %.6f\n" % (msg.partition(), now))
        sys.stdout.flush()

    sys.stdout.write("ready %s\n" % libversion()[0])
    sys.stdout.flush()
    interval = 1.0 / rate
    next_at = time.time()
    i = 0
    while not stop.is_set():
        try:
            p.produce(topic, key=b"k%d" % (i % 30), value=b"v%d" % i, on_delivery=report)
        except BufferError:
            pass
        i += 1
        next_at += interval
        while True:
            left = next_at - time.time()
            if left <= 0:
                break
            p.poll(min(left, 0.01))
        p.poll(0)
    p.flush(10)


if __name__ == "__main__":
    main()
