package kafka

import (
	"context"
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
