package link

import (
	"testing"
	"time"
)

// SetFollowInterval makes the syncers started during t read their sources every d.
func SetFollowInterval(t *testing.T, d time.Duration) {
	old := followInterval
	followInterval = d
	t.Cleanup(func() { followInterval = old })
}
