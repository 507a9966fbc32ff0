package config

import (
	"errors"
	"strings"
	"testing"
)

// TestMigrationPolicyValues: an invalid group.consumer.migration.policy stops the
// node at start-up naming the property (docs/consumer-groups.md), from the file or
// --set; Kafka's names are accepted in any case, as Kafka validates them
// case-insensitively.
func TestMigrationPolicyValues(t *testing.T) {
	for _, bad := range []string{"both", "", "up-grade"} {
		_, err := Load(writeFile(t, "group.consumer.migration.policy="+bad+"\n"), nil)
		var e *Error
		if !errors.As(err, &e) || e.Key != "group.consumer.migration.policy" || !errors.Is(err, ErrInvalidConfig) ||
			!strings.Contains(err.Error(), "group.consumer.migration.policy") || !strings.Contains(err.Error(), "not one of bidirectional, upgrade, downgrade, disabled") {
			t.Errorf("policy %q in the file: got %v, want an invalid-config error naming the property and its values", bad, err)
		}
		if _, err := Load("", []string{"group.consumer.migration.policy=" + bad}); !errors.As(err, &e) || e.Key != "group.consumer.migration.policy" {
			t.Errorf("policy %q in --set: got %v", bad, err)
		}
	}
	for _, ok := range []string{"bidirectional", "UPGRADE", "Bidirectional", "downgrade", "Disabled"} {
		b, err := Load(writeFile(t, "group.consumer.migration.policy="+ok+"\n"), nil)
		if err != nil {
			t.Errorf("policy %q: %v", ok, err)
			continue
		}
		if b.GroupConsumerMigrationPolicy != ok {
			t.Errorf("policy %q read as %q", ok, b.GroupConsumerMigrationPolicy)
		}
	}
}
