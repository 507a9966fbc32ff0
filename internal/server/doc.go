// Package server builds one Runnel node from its parts and runs it: the metadata
// controller (Raft), the log manager, the replica manager, the Kafka protocol server and
// the HTTP endpoints. It holds no protocol or storage logic; it wires, starts in
// dependency order and stops in reverse (stop serving clients, hand over leadership,
// flush and close the logs, leave the quorum).
package server
