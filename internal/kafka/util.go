package kafka

import (
	"context"
	"strings"
	"time"
)

// withRequestTimeout bounds ctx by a request's TimeoutMillis (<= 0: 30 s).
func withRequestTimeout(ctx context.Context, ms int32) (context.Context, context.CancelFunc) {
	d := time.Duration(ms) * time.Millisecond
	if d <= 0 {
		d = 30 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

type clientIDKey struct{}

// withClientID records the requesting client's id in ctx for the handlers below.
func withClientID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientIDKey{}, id)
}

// nodeClientIDPrefix starts the client id of every request one node sends another.
const nodeClientIDPrefix = "runnel-node-"

// FromNode reports whether the request being handled under ctx was sent by another
// Runnel node (forwarded admin requests, controller traffic), not by a client.
func FromNode(ctx context.Context) bool {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return strings.HasPrefix(id, nodeClientIDPrefix)
}
