"""kafka-python over SASL_SSL, with its defaults plus only the security settings.

Run by internal/interop/security_clients_test.go as

    python3 secured_kafka_python.py BOOTSTRAP TOPIC

with the settings in the environment (see secured_env.py). The topic exists, with one
partition. ok: a producer sends 10 keyed records (acks all) at offsets 0..9, a consumer
group reads exactly them, commits, and reads its commit back. auth-failure (a wrong
password): the producer cannot bootstrap (NoBrokersAvailable). kafka-python 2.0.2 logs in
with SaslHandshake v0 and raw SASL frames, where a broker cannot answer an error and
closes the connection (as Kafka does), so the connection's log must show that it was
closed during the SASL exchange and not before (a TLS or connect failure).
"""

import logging

import lib
import secured_env
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import NoBrokersAvailable

RECORDS = 10


def security(env):
    return {"security_protocol": "SASL_SSL", "sasl_mechanism": env.mechanism,
            "sasl_plain_username": env.username, "sasl_plain_password": env.password,
            "ssl_cafile": env.cafile}


def scenario(a):
    env = secured_env.read()
    if env.expect == "auth-failure":
        wrong_password(a, security(env))
        return
    sec = security(env)
    lib.step("produce %d records with %s" % (RECORDS, env.mechanism))
    producer = KafkaProducer(bootstrap_servers=a.brokers, acks="all", **sec)
    try:
        futures = [producer.send(a.topic, key=b"k%d" % i, value=b"secured %d" % i, partition=0) for i in range(RECORDS)]
        producer.flush(timeout=20)
        lib.equal([f.get(timeout=10).offset for f in futures], list(range(RECORDS)), "offsets of the produced records")
    finally:
        producer.close(timeout=10)

    group = a.topic + "-group"
    lib.step("consume in group " + group)
    consumer = KafkaConsumer(a.topic, bootstrap_servers=a.brokers, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **sec)
    try:
        def poll():
            return [(r.offset, r.key, r.value) for rs in consumer.poll(timeout_ms=200).values() for r in rs]
        got = lib.poll_until(poll, RECORDS, "group " + group)
        lib.equal(got, [(i, b"k%d" % i, b"secured %d" % i) for i in range(RECORDS)], "records consumed")
        lib.step("commit")
        consumer.commit()
        lib.equal(consumer.committed(TopicPartition(a.topic, 0)), RECORDS, "committed offset")
    finally:
        consumer.close()


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def wrong_password(a, sec):
    lib.step("bootstrap with a wrong password")
    capture = Capture()
    conn_log = logging.getLogger("kafka.conn")
    conn_log.addHandler(capture)
    conn_log.setLevel(logging.DEBUG)
    conn_log.propagate = False  # its debug lines only in the summary below
    try:
        KafkaProducer(bootstrap_servers=a.brokers, **sec).close(timeout=1)
        raise lib.Mismatch("KafkaProducer bootstrapped with a wrong password")
    except NoBrokersAvailable:
        pass
    finally:
        conn_log.removeHandler(capture)
        conn_log.propagate = True
    # "Error receiving reply from server" is kafka-python's log of a connection closed
    # in the middle of its SASL exchange (_try_authenticate_plain/_scram), after the
    # TLS handshake and the SaslHandshake succeeded.
    lib.log("kafka.conn log of the failed login:\n  " + "\n  ".join(capture.messages[-12:]))
    lib.check(any("Error receiving reply from server" in m for m in capture.messages),
              "no connection of kafka-python was closed during the SASL exchange; its log: %r" % capture.messages[-12:])
    lib.check(not any("Authenticated as" in m for m in capture.messages),
              "kafka-python logged a successful login with a wrong password")


if __name__ == "__main__":
    lib.run("secured kafka-python", scenario)
