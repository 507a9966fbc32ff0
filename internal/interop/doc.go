// Package interop holds no code: its tests prove from outside that Runnel is a Kafka
// broker. Each test drives a real node (in-process through internal/server, or the
// built `runnel` binary as a separate process) over real sockets with real clients:
// franz-go (kgo, kadm and raw kmsg requests), sarama, segmentio/kafka-go, kcat
// (librdkafka), KafkaJS (js/, run by kafkajs_test.go when npm installed it) and the
// Python clients kafka-python and confluent-kafka (py/, run by python_test.go when a
// python3 can import them).
//
// The tests check exact contents: every record, its key, value, headers and
// timestamp, its partition and offset, offsets contiguous from 0, and the Kafka error
// code a misuse gets back. The crash tests kill -9 the binary while producers run and
// check that every acknowledged record is still there at its offset after a restart.
//
// Most tests share one node per top-level test and isolate themselves with unique
// topic names (see harness_test.go).
package interop
