package controller

import (
	"testing"

	"github.com/runnel-io/runnel/internal/config"
)

// TestAlterGroupConfigs: a group's configs are kept under its scoped keys, checked on
// the group's whole resulting set, replaced by a legacy AlterConfigs, and deleted.
func TestAlterGroupConfigs(t *testing.T) {
	c := startWithBrokers(t, 1)
	ctx := testCtx(t)
	if err := c.AlterGroupConfigs(ctx, "g", map[string]*string{"consumer.session.timeout.ms": ptr("50000")}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterGroupConfigs(ctx, "g", map[string]*string{"share.auto.offset.reset": ptr("earliest")}, false, true); err != nil {
		t.Fatal(err)
	}
	if own := config.GroupOwnConfigs(c.Image().Configs, "g"); len(own) != 1 || own["consumer.session.timeout.ms"] != "50000" {
		t.Errorf("group g's configs %v after a change and a validate-only one", own)
	}
	// A heartbeat interval past the broker bound is refused.
	wantErr(t, "heartbeat past its bound", c.AlterGroupConfigs(ctx, "g",
		map[string]*string{"consumer.heartbeat.interval.ms": ptr("16000")}, false, false), ErrInvalidConfig)
	wantErr(t, "empty group", c.AlterGroupConfigs(ctx, "", map[string]*string{}, false, false), ErrInvalidRequest)
	if err := c.AlterGroupConfigs(ctx, "g", map[string]*string{"share.record.lock.duration.ms": ptr("20000")}, true, false); err != nil {
		t.Fatal(err)
	}
	if own := config.GroupOwnConfigs(c.Image().Configs, "g"); len(own) != 1 || own["share.record.lock.duration.ms"] != "20000" {
		t.Errorf("group g's configs %v after a replacing change", own)
	}
	if err := c.AlterGroupConfigs(ctx, "g", map[string]*string{"share.record.lock.duration.ms": nil}, false, false); err != nil {
		t.Fatal(err)
	}
	if own := config.GroupOwnConfigs(c.Image().Configs, "g"); len(own) != 0 {
		t.Errorf("group g's configs %v after deleting its last", own)
	}
}
