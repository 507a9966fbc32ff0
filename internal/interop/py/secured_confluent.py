"""confluent-kafka (librdkafka) over SASL_SSL, with its defaults plus only the security
settings.

Run by internal/interop/security_clients_test.go as

    python3 secured_confluent.py BOOTSTRAP TOPIC

with the settings in the environment (see secured_env.py). The topic exists, with one
partition. ok: a Producer sends 10 keyed records at offsets 0..9 (each delivery report
free of errors), a Consumer in a group reads exactly them, commits synchronously and
reads its commit back with committed(). auth-failure (a wrong password): the client's
error callback gets KafkaError._AUTHENTICATION, librdkafka's code for the broker's
SASL_AUTHENTICATION_FAILED, and list_topics fails.
"""

import time

import lib
import secured_env
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

RECORDS = 10


def conf(a, env, errors):
    return {"bootstrap.servers": a.bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanisms": env.mechanism, "sasl.username": env.username,
            "sasl.password": env.password, "ssl.ca.location": env.cafile,
            "error_cb": lambda err: (lib.log("client error: %s" % err), errors.append(err))}


def scenario(a):
    env = secured_env.read()
    errors = []
    if env.expect == "auth-failure":
        wrong_password(a, conf(a, env, errors), errors)
        return
    lib.step("produce %d records with %s" % (RECORDS, env.mechanism))
    producer = Producer(conf(a, env, errors))
    reports = []
    for i in range(RECORDS):
        producer.produce(a.topic, key=b"k%d" % i, value=b"secured %d" % i, partition=0,
                         on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    lib.equal(producer.flush(20), 0, "messages left after flush")
    lib.equal(reports, [(None, i) for i in range(RECORDS)], "delivery reports (error, offset)")

    group = a.topic + "-group"
    lib.step("consume in group " + group)
    c = dict(conf(a, env, errors), **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer = Consumer(c)
    try:
        consumer.subscribe([a.topic])

        def poll():
            m = consumer.poll(0.2)
            if m is None:
                return []
            if m.error():
                raise lib.Mismatch("consume: %s" % m.error())
            return [(m.offset(), m.key(), m.value())]
        got = lib.poll_until(poll, RECORDS, "group " + group)
        lib.equal(got, [(i, b"k%d" % i, b"secured %d" % i) for i in range(RECORDS)], "records consumed")
        lib.step("commit")
        consumer.commit(asynchronous=False)
        lib.equal([tp.offset for tp in consumer.committed([TopicPartition(a.topic, 0)], timeout=10)], [RECORDS], "committed offset")
    finally:
        consumer.close()
    lib.equal(errors, [], "client errors")


def wrong_password(a, c, errors):
    lib.step("connect with a wrong password")
    # librdkafka connects to the bootstrap broker as soon as the client exists.
    producer = Producer(c)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    lib.check(errors, "no error reached error_cb in 10 s")
    lib.equal(errors[0].code(), KafkaError._AUTHENTICATION, "code of the first client error (%s)" % errors[0])
    try:
        producer.list_topics(timeout=2)
        raise lib.Mismatch("list_topics succeeded with a wrong password")
    except KafkaException as e:
        lib.log("list_topics failed: %s" % e)


if __name__ == "__main__":
    lib.run("secured confluent-kafka", scenario)
