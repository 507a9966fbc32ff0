package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The console's topic edits (docs/console.md): adding partitions and changing configs
// are CreatePartitions and IncrementalAlterConfigs, read back here by a Kafka admin
// client; refused without the session's CSRF token, and on a secured node without
// ALTER / ALTER_CONFIGS on the topic.

// topicConfig is topic's config key as DescribeConfigs answers it, and its source.
func topicConfig(t *testing.T, tn *testNode, topic, key string) (value string, source string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := adminOf(t, tn).DescribeTopicConfigs(ctx, topic)
	testutil.NoError(t, err, "describe %s's configs", topic)
	c, err := rc.On(topic, nil)
	testutil.NoError(t, err, "%s's configs", topic)
	for _, kv := range c.Configs {
		if kv.Key == key {
			if kv.Value != nil {
				value = *kv.Value
			}
			return value, kv.Source.String()
		}
	}
	t.Fatalf("topic %s: DescribeConfigs has no %s", topic, key)
	return "", ""
}

func TestConsoleTopicEdits(t *testing.T) {
	tn, _, _, _ := nodeWithTopic(t, "grow", 1)
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	token := cc.csrf()

	// Partitions: refused without the token, then 1 -> 3, as Metadata reads it back.
	code, body := cc.send(http.MethodPost, "/api/v1/topics/grow/partitions", "", map[string]any{"count": 3})
	testutil.Equal(t, code, http.StatusForbidden, "add partitions without X-CSRF-Token: %s", body)
	var pa console.PartitionsAction
	cc.sendOK(http.MethodPost, "/api/v1/topics/grow/partitions", token, map[string]any{"count": 3}, &pa)
	testutil.Equal(t, pa.Partitions, int32(3), "the answer's partition count")
	// Asked directly: kadm's ListTopics may answer from kgo's metadata cache.
	m := rawMetadata(t, tn, "grow")
	testutil.True(t, len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 3, "grow's partitions as Metadata reads them: %+v", m.Topics)
	code, body = cc.send(http.MethodPost, "/api/v1/topics/grow/partitions", token, map[string]any{"count": 2})
	testutil.Equal(t, code, http.StatusBadRequest, "lowering grow to 2 partitions: %s", body)
	testutil.True(t, strings.Contains(body, "has 3 partitions") && strings.Contains(body, "count 2"),
		"the refusal names both counts: %s", body)
	code, body = cc.send(http.MethodPost, "/api/v1/topics/nope/partitions", token, map[string]any{"count": 2})
	testutil.Equal(t, code, http.StatusNotFound, "partitions of a topic that does not exist: %s", body)

	// Configs: set retention.ms, read back as a topic config; then delete it, back to
	// the default.
	change := map[string]any{"set": map[string]string{"retention.ms": "3600000"}}
	code, body = cc.send(http.MethodPost, "/api/v1/topics/grow/configs", "", change)
	testutil.Equal(t, code, http.StatusForbidden, "configs without X-CSRF-Token: %s", body)
	var ca console.ConfigsAction
	cc.sendOK(http.MethodPost, "/api/v1/topics/grow/configs", token, change, &ca)
	testutil.Equal(t, strings.Join(ca.Set, ","), "retention.ms", "the answer's set configs")
	v, src := topicConfig(t, tn, "grow", "retention.ms")
	testutil.Equal(t, v+" "+src, "3600000 DYNAMIC_TOPIC_CONFIG", "grow's retention.ms after the set")
	cc.sendOK(http.MethodPost, "/api/v1/topics/grow/configs", token, map[string]any{"delete": []string{"retention.ms"}}, &ca)
	testutil.Equal(t, strings.Join(ca.Deleted, ","), "retention.ms", "the answer's deleted configs")
	_, src = topicConfig(t, tn, "grow", "retention.ms")
	testutil.True(t, src != "DYNAMIC_TOPIC_CONFIG", "grow's retention.ms after the delete is no topic config: source %s", src)

	// The broker's refusals, naming the config.
	code, body = cc.send(http.MethodPost, "/api/v1/topics/grow/configs", token, map[string]any{"set": map[string]string{"no.such.config": "1"}})
	testutil.Equal(t, code, http.StatusBadRequest, "an unknown config: %s", body)
	testutil.True(t, strings.Contains(body, "no.such.config"), "the refusal names the unknown config: %s", body)
	code, body = cc.send(http.MethodPost, "/api/v1/topics/grow/configs", token, map[string]any{"set": map[string]string{"retention.ms": "soon"}})
	testutil.Equal(t, code, http.StatusBadRequest, "a bad value: %s", body)
	testutil.True(t, strings.Contains(body, "retention.ms"), "the refusal names the config: %s", body)

	// The records page has both forms.
	code, _, page := cc.get("/topics/grow/records")
	testutil.Equal(t, code, http.StatusOK, "grow's records page")
	for _, want := range []string{`data-api="POST /api/v1/topics/grow/partitions"`, `data-api="POST /api/v1/topics/grow/configs"`} {
		testutil.True(t, strings.Contains(page, want), "the records page has the form %s", want)
	}
}

// On a secured node, alice (READ on topic a) may neither add partitions nor change
// configs: each refusal names the ACL, and changes nothing.
func TestConsoleTopicEditsNeedTheirACL(t *testing.T) {
	tn := securedConsoleNode(t)
	alice := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	code, _, body := alice.login("alice", "alice-pw")
	testutil.Equal(t, code, http.StatusOK, "alice's login: %s", body)
	token := alice.csrf()
	alice.checkDenied("alice", token, []denial{
		{http.MethodPost, "/api/v1/topics/a/partitions", map[string]any{"count": 3}, "user alice (host 127.0.0.1) lacks ALTER on topic a"},
		{http.MethodPost, "/api/v1/topics/a/configs", map[string]any{"set": map[string]string{"retention.ms": "1000"}}, "user alice (host 127.0.0.1) lacks ALTER_CONFIGS on topic a"},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adminOf(t, tn).ListTopics(ctx, "a")
	testutil.NoError(t, err, "list a")
	testutil.Equal(t, len(td["a"].Partitions), 1, "a's partitions after alice's refusal")
	_, src := topicConfig(t, tn, "a", "retention.ms")
	testutil.True(t, src != "DYNAMIC_TOPIC_CONFIG", "a's retention.ms after alice's refusal is no topic config: source %s", src)
}
