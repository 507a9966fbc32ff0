// Package client is Runnel's public Go client: a Producer with a bounded buffer and a
// named policy for when it is full, and a Consumer with the seek forms of the command
// line. Both are thin layers over franz-go's kgo.Client, which any Kafka cluster
// (Runnel or not) serves; the package imports nothing under internal/.
//
// # Producer overload
//
// A producer that sends faster than the cluster acknowledges fills its buffer. What
// happens then is a choice, named by OnFull:
//
//   - Block waits for room, for WithEnqueueTimeout (for ever by default, as Kafka's
//     queue.enqueue.timeout.ms=-1), then fails the record with ErrBufferFull.
//   - Error fails the record at once with ErrBufferFull (or after the enqueue
//     timeout, when one is given).
//   - Drop drops the record: Produce returns ErrDropped, Stats counts it and the
//     WithOnDrop callback sees it. A record is never dropped silently.
//
// WithRate and WithByteRate apply before the buffer: a record over the rate waits for
// its turn (it is delayed, never dropped), and only then meets the buffer.
//
// Every Produce call ends in exactly one of two ways: it returns nil and the record's
// promise is called once, when the record is acknowledged or fails; or it returns an
// error and the promise is never called.
//
// # Consumer
//
// A Consumer reads chosen partitions from a Position: an offset, the beginning, the
// end, the first record at or after a time, or a duration back from now. When a
// partition's offset is no longer in the log (retention deleted it), the consumer
// resumes at the log start and Poll reports a *DataLossError naming the skipped
// offsets (errors.Is(err, ErrDataLoss)).
//
// Files:
//
//	options.go   Option and every option, with its default
//	producer.go  Producer: buffer accounting, OnFull, Stats
//	rate.go      the token bucket behind WithRate and WithByteRate
//	consumer.go  Consumer: Assign, Seek, Poll, DataLossError
package client
