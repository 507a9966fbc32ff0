package config

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestTopicDefaults(t *testing.T) {
	d := Default().TopicDefaults()
	want := map[string]string{
		"cleanup.policy":                          "delete",
		"compression.type":                        "producer",
		"delete.retention.ms":                     "86400000",
		"file.delete.delay.ms":                    "60000",
		"flush.messages":                          "1", // Runnel: fsync every acknowledged batch
		"flush.ms":                                longMax,
		"index.interval.bytes":                    "4096",
		"max.compaction.lag.ms":                   longMax,
		"max.message.bytes":                       "1048588",
		"message.timestamp.after.max.ms":          "3600000",
		"message.timestamp.before.max.ms":         longMax,
		"message.timestamp.type":                  "CreateTime",
		"min.cleanable.dirty.ratio":               "0.5",
		"min.compaction.lag.ms":                   "0",
		"min.insync.replicas":                     "1",
		"preallocate":                             "false",
		"retention.bytes":                         "-1",
		"retention.ms":                            "604800000",
		"segment.bytes":                           "1073741824",
		"segment.index.bytes":                     "10485760",
		"segment.jitter.ms":                       "0",
		"segment.ms":                              "604800000",
		"unclean.leader.election.enable":          "false",
		"leader.replication.throttled.replicas":   "",
		"follower.replication.throttled.replicas": "",
		"compression.gzip.level":                  "-1",
		"compression.lz4.level":                   "9",
		"compression.zstd.level":                  "3",
	}
	if !reflect.DeepEqual(d, want) {
		for k := range want {
			if d[k] != want[k] {
				t.Errorf("%s = %q, want %q", k, d[k], want[k])
			}
		}
		for k := range d {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected topic default %s", k)
			}
		}
	}
}

// TestRetentionPrecedence: log.retention.ms wins over .minutes, which wins over .hours,
// whatever the order they are given in; the same for log.roll.* and log.roll.jitter.*.
func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		key  string
		want string
	}{
		{"default hours", nil, "retention.ms", "604800000"},
		{"hours", []string{"log.retention.hours=1"}, "retention.ms", "3600000"},
		{"minutes beat hours", []string{"log.retention.minutes=2", "log.retention.hours=1"}, "retention.ms", "120000"},
		{"ms beats minutes", []string{"log.retention.ms=5", "log.retention.minutes=2"}, "retention.ms", "5"},
		{"ms beats hours set later", []string{"log.retention.ms=5", "log.retention.hours=3"}, "retention.ms", "5"},
		{"ms -1 is unlimited", []string{"log.retention.ms=-1"}, "retention.ms", "-1"},
		{"negative hours are unlimited", []string{"log.retention.hours=-1"}, "retention.ms", "-1"},
		{"negative minutes are unlimited", []string{"log.retention.minutes=-5"}, "retention.ms", "-1"},
		{"roll hours", []string{"log.roll.hours=2"}, "segment.ms", "7200000"},
		{"roll ms beats hours", []string{"log.roll.hours=2", "log.roll.ms=10"}, "segment.ms", "10"},
		{"jitter hours", []string{"log.roll.jitter.hours=1"}, "segment.jitter.ms", "3600000"},
		{"jitter ms", []string{"log.roll.jitter.hours=1", "log.roll.jitter.ms=7"}, "segment.jitter.ms", "7"},
		{"flush.ms from log.flush.interval.ms", []string{"log.flush.interval.ms=250"}, "flush.ms", "250"},
		{"max.message.bytes from message.max.bytes", []string{"message.max.bytes=2000"}, "max.message.bytes", "2000"},
		{"cleanup.policy", []string{"log.cleanup.policy=compact"}, "cleanup.policy", "compact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.TopicDefaults()[tt.key]; got != tt.want {
				t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestResolveTopic(t *testing.T) {
	b, err := Load("", []string{"log.segment.bytes=1048576", "min.insync.replicas=2", "log.retention.hours=48"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.ResolveTopic(map[string]string{
		"retention.ms":                   "1000",
		"cleanup.policy":                 "delete, compact",
		"unclean.leader.election.enable": "TRUE",
		"min.cleanable.dirty.ratio":      "0.25",
		"flush.messages":                 " 100 ",
		"compression.zstd.level":         "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := TopicConfig{
		CleanupPolicy: "compact,delete", RetentionMs: 1000, RetentionBytes: -1,
		SegmentBytes: 1048576, SegmentMs: 604800000, SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096,
		FlushMessages: 100, FlushMs: math.MaxInt64, MaxMessageBytes: 1048588, MinInsyncReplicas: 2,
		UncleanLeaderElection: true, MessageTimestampType: "CreateTime", DeleteRetentionMs: 86400000,
		MinCleanableDirtyRatio: 0.25, CompressionType: "producer", FileDeleteDelayMs: 60000,
		MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: 3600000,
		MaxCompactionLagMs: math.MaxInt64,
	}
	if c != want {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if !c.Compact() || !c.Delete() {
		t.Errorf("Compact %v Delete %v, want both", c.Compact(), c.Delete())
	}
	if d, _ := b.ResolveTopic(nil); d.RetentionMs != 48*3600000 || d.Compact() || !d.Delete() {
		t.Errorf("defaults: %+v", d)
	}
}

func TestResolveTopicErrors(t *testing.T) {
	b := Default()
	for overrides, key := range map[*map[string]string]string{
		{"retention.ms": "1", "segment.bytes": "x"}:      "segment.bytes",
		{"retention.ms": "1", "retension.ms": "1"}:       "retension.ms",
		{"log.retention.ms": "1"}:                        "log.retention.ms",
		{"a.bad": "1", "z.bad": "2"}:                     "a.bad",
		{"cleanup.policy": ""}:                           "cleanup.policy",
		{"min.insync.replicas": "0", "preallocate": "1"}: "min.insync.replicas",
	} {
		_, err := b.ResolveTopic(*overrides)
		var e *Error
		if !errors.As(err, &e) || e.Key != key {
			t.Errorf("%v: got %v, want an *Error naming %s", *overrides, err, key)
		}
	}
}

func TestValidateTopicConfig(t *testing.T) {
	tests := []struct {
		key, value string
		reason     string // "" for valid
	}{
		// LIST
		{"cleanup.policy", "delete", ""},
		{"cleanup.policy", "compact,delete", ""},
		{"cleanup.policy", "compact, delete", ""},
		{"cleanup.policy", "", "is empty"},
		{"cleanup.policy", "archive", `"archive"`},
		{"leader.replication.throttled.replicas", "*", ""},
		{"leader.replication.throttled.replicas", "0:1,1:2", ""},
		{"leader.replication.throttled.replicas", "", ""},
		{"follower.replication.throttled.replicas", "0-1", "PARTITION:BROKER"},
		// STRING
		{"compression.type", "zstd", ""},
		{"compression.type", "uncompressed", ""},
		{"compression.type", "ZSTD", "not one of"},
		{"message.timestamp.type", "LogAppendTime", ""},
		{"message.timestamp.type", "AppendTime", "not one of"},
		// LONG
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", "minimum -1"},
		{"retention.ms", "9223372036854775807", ""},
		{"retention.ms", "9223372036854775808", "64 bits"},
		{"retention.ms", "1h", "not an integer"},
		{"retention.bytes", "-5", ""},
		{"flush.messages", "0", "minimum 1"},
		{"flush.ms", "0", ""},
		{"segment.ms", "0", "minimum 1"},
		// INT
		{"segment.bytes", "14", ""},
		{"segment.bytes", "13", "minimum 14"},
		{"segment.bytes", "2147483648", "32 bits"},
		{"max.message.bytes", "-1", "minimum 0"},
		{"min.insync.replicas", "2", ""},
		{"min.insync.replicas", "0", "minimum 1"},
		{"segment.index.bytes", "3", "minimum 4"},
		{"compression.gzip.level", "-1", ""},
		{"compression.gzip.level", "0", "not -1"},
		{"compression.lz4.level", "18", "out of range"},
		// DOUBLE
		{"min.cleanable.dirty.ratio", "0", ""},
		{"min.cleanable.dirty.ratio", "1", ""},
		{"min.cleanable.dirty.ratio", "1.01", "out of range"},
		{"min.cleanable.dirty.ratio", "NaN", "not a number"},
		{"min.cleanable.dirty.ratio", "x", "not a number"},
		// BOOLEAN
		{"preallocate", "true", ""},
		{"unclean.leader.election.enable", "False", ""},
		{"unclean.leader.election.enable", "1", "not a boolean"},
	}
	for _, tt := range tests {
		err := ValidateTopicConfig(tt.key, tt.value)
		if tt.reason == "" {
			if err != nil {
				t.Errorf("%s=%q: %v", tt.key, tt.value, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidConfig) || e.Key != tt.key ||
			e.Value != tt.value || !strings.Contains(e.Reason, tt.reason) {
			t.Errorf("%s=%q: got %v, want an invalid-config *Error with %q", tt.key, tt.value, err, tt.reason)
		}
	}
	err := ValidateTopicConfig("segment.byte", "1")
	if !errors.Is(err, ErrUnknownConfig) || err.Error() != `config: unknown topic config "segment.byte"; did you mean "segment.bytes"?` {
		t.Errorf("unknown key: got %v", err)
	}
	if IsTopicConfig("log.retention.ms") || !IsTopicConfig("retention.ms") || !IsTopicConfig("min.insync.replicas") {
		t.Error("IsTopicConfig confuses broker and topic names")
	}
}
