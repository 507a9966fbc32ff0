package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one decoded request. It returns the response to send, or nil for no
// response (acks=0 produce). A returned error closes the connection; per-partition
// failures belong in the response, not here.
type handler func(ctx context.Context, s *Server, r *request) (kmsg.Response, error)

type registration struct {
	min, max int16
	fn       handler
	// overlapping: the handler waits for its turn and ends it itself, before it is
	// done (pipeline.go); otherwise its turn is its whole run.
	overlapping bool
}

// handlers is indexed by API key and written only from init functions.
var handlers = map[int16]registration{}

// regKey registers the handler and version range of one API key.
func regKey(key, min, max int16, fn handler) {
	if _, dup := handlers[key]; dup {
		panic("kafka: duplicate handler for key " + kmsg.NameForKey(key))
	}
	if kmax := kmsg.RequestForKey(key).MaxVersion(); max > kmax {
		panic("kafka: registered version above what kmsg implements for " + kmsg.NameForKey(key))
	}
	handlers[key] = registration{min: min, max: max, fn: fn}
}

// regKeyOverlapping registers a handler that takes and ends its own turn in its
// connection's order (pipeline.go says which APIs may and why).
func regKeyOverlapping(key, min, max int16, fn handler) {
	regKey(key, min, max, fn)
	reg := handlers[key]
	reg.overlapping = true
	handlers[key] = reg
}

// supportedKeys lists the registered keys in order, for ApiVersions.
func supportedKeys() []int16 {
	keys := make([]int16, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func apiName(key int16) string { return kmsg.NameForKey(key) }
