package controller

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/config"
)

// TestAlterNodeConfigs: a broker's own dynamic config is kept under its scoped key,
// beside the cluster-wide default of the same property and apart from another
// broker's; a deletion removes only that broker's value; the validator sees the
// property's own name; reserved keys are refused in either scope, deletions included.
func TestAlterNodeConfigs(t *testing.T) {
	c := startWithBrokers(t, 1)
	c.cfg.ValidateBrokerConfig = config.ValidateDynamicBrokerConfig
	c.cfg.ValidateNodeConfig = config.ValidatePerBrokerConfig
	ctx := testCtx(t)
	const rate = "follower.replication.throttled.rate"
	if err := c.AlterBrokerConfigs(ctx, map[string]*string{rate: ptr("100")}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterNodeConfigs(ctx, 2, map[string]*string{rate: ptr("7")}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterNodeConfigs(ctx, 3, map[string]*string{rate: ptr("9")}, true); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if got := config.DynamicBrokerLongFor(im.Configs, 2, rate, -1); got != 7 {
		t.Errorf("node 2's rate %d, want its own 7", got)
	}
	if got := config.DynamicBrokerLongFor(im.Configs, 1, rate, -1); got != 100 {
		t.Errorf("node 1's rate %d, want the default 100", got)
	}
	if got := config.DynamicBrokerLongFor(im.Configs, 3, rate, -1); got != 100 {
		t.Errorf("node 3's rate %d after a validate-only change, want the default 100", got)
	}
	if own := config.BrokerOwnConfigs(im.Configs, 2); len(own) != 1 || own[rate] != "7" {
		t.Errorf("node 2's own configs %v", own)
	}

	// A static property is refused (a topic config name is taken, as Kafka takes any
	// name of its own: config.ValidatePerBrokerConfig).
	err := c.AlterNodeConfigs(ctx, 2, map[string]*string{"num.partitions": ptr("5")}, false)
	wantErr(t, "static property for one broker", err, ErrInvalidConfig)
	if !strings.Contains(err.Error(), "num.partitions") {
		t.Errorf("error %q does not name the config", err)
	}
	wantErr(t, "bad rate", c.AlterNodeConfigs(ctx, 2, map[string]*string{rate: ptr("-1")}, false), ErrInvalidConfig)
	for _, k := range []string{config.BrokerScopedKey(2, rate), config.ControllerStatePrefix + "balancer.throttles",
		config.GroupScopedKey("g", "consumer.session.timeout.ms")} {
		wantErr(t, "reserved key "+k, c.AlterBrokerConfigs(ctx, map[string]*string{k: nil}, false), ErrInvalidConfig)
		wantErr(t, "reserved key "+k+" on a node", c.AlterNodeConfigs(ctx, 2, map[string]*string{k: nil}, false), ErrInvalidConfig)
	}

	if err := c.AlterNodeConfigs(ctx, 2, map[string]*string{rate: nil}, false); err != nil {
		t.Fatal(err)
	}
	im = c.Image()
	if got := config.DynamicBrokerLongFor(im.Configs, 2, rate, -1); got != 100 {
		t.Errorf("node 2's rate %d after deleting its own, want the default 100", got)
	}
	if im.Configs[rate] != "100" {
		t.Errorf("deleting node 2's rate changed the default: %v", im.Configs)
	}
}
