// Package kafka is the Kafka protocol server: the listener, one reader and one writer
// goroutine per connection, and one handler per API key in a file named after the key
// (00_produce.go, 01_fetch.go, ...), each registering its supported version range in
// init(); ApiVersions is generated from that registry, so it advertises exactly what is
// implemented. Requests are decoded and responses encoded with franz-go's kmsg.
//
// Flow control: every request holds one slot of a server-wide semaphore of
// queued.max.requests from the moment its frame is read until its response is queued.
// When the slots run out, readers stop reading from their sockets, so a flood of
// producers meets TCP back-pressure instead of growing the heap. Within a connection,
// requests are handled concurrently and their responses written in request order.
//
// Errors: handlers return internal errors; errors.go maps them to Kafka codes in one
// table. Every partition gets its own code; one bad partition never fails a request.
package kafka
