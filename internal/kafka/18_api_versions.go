package kafka

// ApiVersions: v0-4.
//
// The response is generated from the handler registry, so it lists exactly the keys and
// versions this server implements. A request at a version we do not know is answered at
// v0 with UNSUPPORTED_VERSION and the list (KIP-511), so the client can retry lower.
// v3+ client software name and version are accepted and ignored.
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
	return resp
}
