package kafka

// ApiVersions: v0-4.
//
// The response is generated from the handler registry, so it lists exactly the keys and
// versions this server implements. A request at a version we do not know is answered at
// v0 with UNSUPPORTED_VERSION and the list (KIP-511), so the client can retry lower.
// v3+ client software name and version are accepted and ignored.
//
// Features (v3+): transaction.version is supported and finalized at 2 (KIP-890 part
// 2), which tells clients to bump the epoch per transaction (EndTxn v5) and to add
// partitions implicitly (Produce v12, TxnOffsetCommit v5). Clients that do not look
// at features, or cap those request versions, keep transaction version 1.
// runnel.version (supported, never finalized) tells Runnel's tools they talk to Runnel.
//
// Produce is advertised from v0 although v0-2 are answered UNSUPPORTED_VERSION, as
// Kafka 4.0 does (KAFKA-18659): librdkafka before 2.10 compresses with gzip, snappy or
// lz4 only if the broker lists Produce v0, and otherwise silently sends uncompressed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(18, 0, 4, handleApiVersions) }

func handleApiVersions(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	return apiVersionsResponse(), nil
}

func apiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, key := range supportedKeys() {
		reg := handlers[key]
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, reg.min, reg.max
		if key == 0 {
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, transactionVersion
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	rf := kmsg.NewApiVersionsResponseSupportedFeature()
	rf.Name, rf.MinVersion, rf.MaxVersion = RunnelFeature, 1, RunnelFeatureLevel
	resp.SupportedFeatures = append(resp.SupportedFeatures, rf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, transactionVersion, transactionVersion
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
	return resp
}

// RunnelFeature is the supported feature (KIP-584, ApiVersions v3+) by which Runnel's
// own tools tell a Runnel node from another Kafka implementation, and so whether it
// understands Runnel's tagged fields (ReassignmentThrottleTag and the like). Clients
// skip features they do not know. Level 1: the wave-3 tagged fields.
const (
	RunnelFeature      = "runnel.version"
	RunnelFeatureLevel = 1
)

const (
	// transactionVersionFeature is Kafka's feature flag for the transaction
	// protocol; version 2 is KIP-890 part 2.
	transactionVersionFeature = "transaction.version"
	transactionVersion        = 2
	// finalizedFeaturesEpoch versions the finalized features; they never change
	// while a node runs, so the epoch is constant (Kafka uses the metadata offset).
	finalizedFeaturesEpoch = 1
)
