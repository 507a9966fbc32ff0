package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// writeFile writes a server.properties for one test and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefault(t *testing.T) {
	b := Default()
	tests := []struct {
		name      string
		got, want any
	}{
		{"NodeID", b.NodeID, int32(1)},
		{"DataDir", b.DataDir, "./runnel-data"},
		{"Listen", b.Listen, "localhost:9092"},
		{"Advertise", b.Advertise, "localhost:9092"},
		{"ControllerListen", b.ControllerListen, "localhost:9093"},
		{"HTTPListen", b.HTTPListen, "localhost:9644"},
		{"Controllers", len(b.Controllers), 0},
		{"QuorumVoters", b.QuorumVoters(), []Voter{{1, "localhost:9093"}}},
		{"IsController", b.IsController(), true},
		{"BrokerRack", b.BrokerRack, ""},
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"MinInsyncReplicas", b.MinInsyncReplicas, int32(1)},
		{"AutoCreateTopics", b.AutoCreateTopics, true},
		{"DeleteTopicEnable", b.DeleteTopicEnable, true},
		{"UncleanLeaderElection", b.UncleanLeaderElection, false},
		{"AutoLeaderRebalance", b.AutoLeaderRebalance, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"QueuedMaxRequests", b.QueuedMaxRequests, 500},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"Raw num.io.threads (ignored)", b.Raw["num.io.threads"], "8"},
		{"ReplicaLagTimeMaxMs", b.ReplicaLagTimeMaxMs, int64(30000)},
		{"ReplicaFetchMaxBytes", b.ReplicaFetchMaxBytes, int32(1048576)},
		{"ReplicaFetchResponseMaxBytes", b.ReplicaFetchResponseMaxBytes, int32(10485760)},
		{"ReplicaFetchWaitMaxMs", b.ReplicaFetchWaitMaxMs, int32(500)},
		{"BrokerSessionTimeoutMs", b.BrokerSessionTimeoutMs, int32(2000)},
		{"BrokerHeartbeatIntervalMs", b.BrokerHeartbeatIntervalMs, int32(500)},
		{"GroupInitialRebalanceDelayMs", b.GroupInitialRebalanceDelayMs, int32(3000)},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"TransactionTimeoutMaxMs", b.TransactionTimeoutMaxMs, int32(900000)},
		{"TransactionAbortIntervalMs", b.TransactionAbortIntervalMs, int32(10000)},
		{"LogRetentionCheckIntervalMs", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"LogFlushSchedulerIntervalMs", b.LogFlushSchedulerIntervalMs, int64(1000)},
		{"LogFlushOffsetCheckpointIntervalMs", b.LogFlushOffsetCheckpointIntervalMs, int64(60000)},
		{"NumRecoveryThreadsPerDataDir", b.NumRecoveryThreadsPerDataDir, 2},
		{"LeaderReplicationThrottledRate", b.LeaderReplicationThrottledRate, int64(9223372036854775807)},
		{"LeaderImbalancePerBrokerPercent", b.LeaderImbalancePerBrokerPercent, int32(10)},
		{"PartitionAutobalancingMode", b.PartitionAutobalancingMode, "node_add"},
		{"ReplicaFetchBackoffMs", b.ReplicaFetchBackoffMs, int32(100)},
		{"ReplicaFetchMinBytes", b.ReplicaFetchMinBytes, int32(1)},
		{"ConnectionsMaxIdleMs", b.ConnectionsMaxIdleMs, int64(600000)},
		{"Raw log.flush.interval.messages", b.Raw["log.flush.interval.messages"], "1"},
		{"Raw has no log.flush.interval.ms", hasKey(b.Raw, "log.flush.interval.ms"), false},
		{"Raw log.retention.hours", b.Raw["log.retention.hours"], "168"},
		{"IgnoredSet", len(b.IgnoredSet()), 0},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
	if got, err := Load("", nil); err != nil || !reflect.DeepEqual(got, b) {
		t.Errorf("Load(\"\", nil) = %+v, %v; want Default()", got, err)
	}
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// kraftProperties is shaped like the server.properties Kafka ships for KRaft mode.
const kraftProperties = `
############################# Server Basics #############################
process.roles=broker,controller
node.id=2
controller.quorum.voters=1@n1:9093,2@n2:9093,3@n3:9093

############################# Socket Server Settings #############################
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://n2:9092,CONTROLLER://n2:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################
log.dirs=/var/lib/runnel
num.partitions=3
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
log.flush.interval.messages=10000
log.flush.interval.ms=1000
log.retention.hours=24
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
broker.rack : eu-west-1a
`

func TestLoadKafkaServerProperties(t *testing.T) {
	b, err := Load(writeFile(t, kraftProperties), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Voter{{1, "n1:9093"}, {2, "n2:9093"}, {3, "n3:9093"}}
	if !reflect.DeepEqual(b.Controllers, want) {
		t.Errorf("Controllers = %v, want %v", b.Controllers, want)
	}
	check := map[string][2]any{
		"NodeID":           {b.NodeID, int32(2)},
		"DataDir":          {b.DataDir, "/var/lib/runnel"},
		"Listen":           {b.Listen, ":9092"},
		"ControllerListen": {b.ControllerListen, ":9093"},
		"Advertise":        {b.Advertise, "n2:9092"},
		"BrokerRack":       {b.BrokerRack, "eu-west-1a"},
		"NumPartitions":    {b.NumPartitions, int32(3)},
		"Recovery":         {b.NumRecoveryThreadsPerDataDir, 1},
		"IsController":     {b.IsController(), true},
		"flush.messages":   {b.TopicDefaults()["flush.messages"], "10000"},
		"flush.ms":         {b.TopicDefaults()["flush.ms"], "1000"},
		"retention.ms":     {b.TopicDefaults()["retention.ms"], "86400000"},
	}
	for name, c := range check {
		if !reflect.DeepEqual(c[0], c[1]) {
			t.Errorf("%s = %#v, want %#v", name, c[0], c[1])
		}
	}
	wantIgnored := []string{"num.io.threads", "num.network.threads", "process.roles",
		"socket.receive.buffer.bytes", "socket.send.buffer.bytes",
		"transaction.state.log.min.isr", "transaction.state.log.replication.factor"}
	if got := b.IgnoredSet(); !slices.Equal(got, wantIgnored) {
		t.Errorf("IgnoredSet = %v, want %v", got, wantIgnored)
	}
}

func TestIgnoredWarnings(t *testing.T) {
	b, err := Load("", []string{"num.io.threads=16", "num.network.threads=20", "num.partitions=3"})
	if err != nil {
		t.Fatal(err)
	}
	got := b.IgnoredWarnings()
	if len(got) != 2 {
		t.Fatalf("IgnoredWarnings = %q, want one for each ignored property set", got)
	}
	for i, name := range []string{"num.io.threads", "num.network.threads"} {
		want := "property " + name + " is accepted for compatibility but ignored: "
		if !strings.HasPrefix(got[i], want) || len(got[i]) < len(want)+10 {
			t.Errorf("IgnoredWarnings[%d] = %q, want %q and why", i, got[i], want)
		}
	}
	if got := Default().IgnoredWarnings(); len(got) != 0 {
		t.Errorf("defaults warn: %q", got)
	}
}

func TestSetWinsOverFile(t *testing.T) {
	file := writeFile(t, "num.partitions=3\nlog.dirs=/a\nlisten=h:1\nbroker.rack=r1\n")
	b, err := Load(file, []string{"num.partitions=7", "log.dirs = /b", "listeners=PLAINTEXT://h:2", "num.partitions=8"})
	if err != nil {
		t.Fatal(err)
	}
	if b.NumPartitions != 8 || b.Raw["num.partitions"] != "8" {
		t.Errorf("NumPartitions = %d (raw %q), want the last --set, 8", b.NumPartitions, b.Raw["num.partitions"])
	}
	if b.DataDir != "/b" || b.Listen != "h:2" || b.Advertise != "h:2" || b.BrokerRack != "r1" {
		t.Errorf("DataDir %q Listen %q Advertise %q BrokerRack %q", b.DataDir, b.Listen, b.Advertise, b.BrokerRack)
	}
}

// TestAddressPrecedence covers Kafka keys feeding Runnel keys: the later one wins, and
// within a file the Runnel key wins.
func TestAddressPrecedence(t *testing.T) {
	tests := []struct {
		name                           string
		file                           string
		sets                           []string
		listen, ctrl, advertise, voter string
	}{
		{"runnel key wins in a file", "listen=a:1\nlisteners=PLAINTEXT://b:1,CONTROLLER://b:2\n", nil, "a:1", "b:2", "a:1", ""},
		{"--set listeners beats file listen", "listen=a:1\n", []string{"listeners=PLAINTEXT://b:1"}, "b:1", "localhost:9093", "b:1", ""},
		{"later --set wins", "", []string{"listeners=PLAINTEXT://b:1", "listen=c:1", "advertised.listeners=PLAINTEXT://d:1", "advertise=e:1"}, "c:1", "localhost:9093", "e:1", ""},
		{"controller names are honoured", "controller.listener.names=RAFT\nlisteners=RAFT://r:1,CLIENT://c:1\nlistener.security.protocol.map=RAFT:PLAINTEXT,CLIENT:PLAINTEXT\ninter.broker.listener.name=CLIENT\n", nil, "c:1", "r:1", "c:1", ""},
		{"controller names set after listeners", "listeners=RAFT://r:1,PLAINTEXT://c:1\n", []string{"controller.listener.names=RAFT"}, "c:1", "r:1", "c:1", ""},
		{"only a controller listener", "listeners=CONTROLLER://x:5\n", nil, "localhost:9092", "x:5", "localhost:9092", ""},
		{"voters from kafka key", "controller.quorum.voters=1@a:1\n", []string{}, "localhost:9092", "localhost:9093", "localhost:9092", "1@a:1"},
		{"controllers beats voters in file", "controller.quorum.voters=1@a:1\ncontrollers=2@b:1\n", nil, "localhost:9092", "localhost:9093", "localhost:9092", "2@b:1"},
		{"--set voters beats file controllers", "controllers=2@b:1\n", []string{"controller.quorum.voters=3@c:1"}, "localhost:9092", "localhost:9093", "localhost:9092", "3@c:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(writeFile(t, tt.file), tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			var voters []string
			for _, v := range b.Controllers {
				voters = append(voters, v.String())
			}
			got := [4]string{b.Listen, b.ControllerListen, b.Advertise, strings.Join(voters, ",")}
			want := [4]string{tt.listen, tt.ctrl, tt.advertise, tt.voter}
			if got != want {
				t.Errorf("listen, controller.listen, advertise, controllers = %q, want %q", got, want)
			}
			if b.Raw["listen"] != b.Listen || b.Raw["advertise"] != b.Advertise || b.Raw["controller.listen"] != b.ControllerListen {
				t.Errorf("Raw disagrees with the fields: %q %q %q", b.Raw["listen"], b.Raw["advertise"], b.Raw["controller.listen"])
			}
		})
	}
}

func TestAdvertiseWildcardUsesHostname(t *testing.T) {
	old := hostname
	hostname = func() (string, error) { return "node7.example", nil }
	t.Cleanup(func() { hostname = old })
	for listen, want := range map[string]string{
		":9092":         "node7.example:9092",
		"0.0.0.0:9092":  "node7.example:9092",
		"[::]:9092":     "node7.example:9092",
		"10.0.0.1:9092": "10.0.0.1:9092",
		"myhost:9092":   "myhost:9092",
	} {
		b, err := Load("", []string{"listen=" + listen})
		if err != nil {
			t.Fatal(err)
		}
		if b.Advertise != want {
			t.Errorf("listen %q: Advertise = %q, want %q", listen, b.Advertise, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		file     string // "" for no file
		sets     []string
		key, msg string // the *Error's Key and a substring of its message
		unknown  bool
		fromFile bool
	}{
		{"unknown in file", "log.segmnt.bytes=1\n", nil, "log.segmnt.bytes", `config: unknown property "log.segmnt.bytes"`, true, true},
		{"unknown in --set", "", []string{"log.segmnt.bytes=1"}, "log.segmnt.bytes", `config: unknown property "log.segmnt.bytes" (in --set)`, true, false},
		{"zookeeper is unknown", "zookeeper.connect=zk:2181\n", nil, "zookeeper.connect", "own Raft quorum", true, true},
		{"broker.id hints node.id", "", []string{"broker.id=1"}, "broker.id", "use node.id", true, false},
		{"first unknown alphabetically", "zz=1\naa=1\nnum.partitions=x\n", nil, "aa", `"aa"`, true, true},
		{"not an integer", "log.segment.bytes=abc\n", nil, "log.segment.bytes", `config: log.segment.bytes: "abc" is not an integer`, false, true},
		{"int overflow", "", []string{"num.partitions=3000000000"}, "num.partitions", "does not fit in 32 bits", false, false},
		{"short overflow", "", []string{"offsets.topic.replication.factor=40000"}, "offsets.topic.replication.factor", "16 bits", false, false},
		{"below minimum", "", []string{"num.partitions=0"}, "num.partitions", `"0" is less than the minimum 1`, false, false},
		{"replication factor range", "", []string{"default.replication.factor=0"}, "default.replication.factor", "out of range", false, false},
		{"topic check inherited", "", []string{"log.segment.bytes=10"}, "log.segment.bytes", "minimum 14", false, false},
		{"bad boolean", "", []string{"auto.create.topics.enable=yes"}, "auto.create.topics.enable", "not a boolean", false, false},
		{"empty integer", "", []string{"num.io.threads="}, "num.io.threads", `"" is not an integer`, false, false},
		{"bad double", "", []string{"log.cleaner.min.cleanable.ratio=half"}, "log.cleaner.min.cleanable.ratio", "not a number", false, false},
		{"ratio range", "", []string{"log.cleaner.min.cleanable.ratio=1.5"}, "log.cleaner.min.cleanable.ratio", "out of range", false, false},
		{"bad policy", "", []string{"log.cleanup.policy=delete,shred"}, "log.cleanup.policy", `"shred"`, false, false},
		{"bad compression", "", []string{"compression.type=brotli"}, "compression.type", "not one of", false, false},
		{"bad timestamp type", "", []string{"log.message.timestamp.type=createtime"}, "log.message.timestamp.type", "not one of", false, false},
		{"missing =", "", []string{"num.partitions"}, "--set", `"num.partitions" is not KEY=VALUE`, false, false},
		{"bad listen", "", []string{"listen=localhost"}, "listen", "not HOST:PORT", false, false},
		{"bad port", "", []string{"http.listen=:99999"}, "http.listen", "invalid port", false, false},
		{"bad listeners", "listeners=localhost:9092\n", nil, "listeners", "NAME://HOST:PORT", false, true},
		{"ssl listener without keystore", "", []string{"listeners=PLAINTEXT://:9092,SSL://:9093"}, "ssl.keystore.location", "listener SSL (SSL) needs a certificate", false, false},
		{"bad voters", "", []string{"controllers=1@a:1,x@b:2"}, "controllers", `"x@b:2"`, false, false},
		{"duplicate voters", "", []string{"controller.quorum.voters=1@a:1,1@b:2"}, "controller.quorum.voters", "twice", false, false},
		{"two data dirs", "log.dirs=/a,/b\n", nil, "log.dirs", "one data directory", false, true},
		{"bad process role", "process.roles=broker,leader\n", nil, "process.roles", `"leader"`, false, true},
		{"bad protocol map", "", []string{"listener.security.protocol.map=A:TLS"}, "listener.security.protocol.map", "protocol", false, false},
		{"heartbeat vs session", "", []string{"broker.heartbeat.interval.ms=9000"}, "broker.heartbeat.interval.ms", "less than broker.session.timeout.ms (2000)", false, false},
		{"fetch wait vs lag", "", []string{"replica.lag.time.max.ms=100"}, "replica.fetch.wait.max.ms", "replica.lag.time.max.ms (100)", false, false},
		{"group session bounds", "", []string{"group.min.session.timeout.ms=2000000"}, "group.min.session.timeout.ms", "group.max.session.timeout.ms", false, false},
		{"bad super user", "", []string{"super.users=User:admin;alice"}, "super.users", `"alice", which is not a principal`, false, false},
		{"malformed escape in file", `log.dirs=\uXYZW` + "\n", nil, "log.dirs", "escape", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := ""
			if tt.file != "" {
				file = writeFile(t, tt.file)
			}
			_, err := Load(file, tt.sets)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if e.Key != tt.key || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got Key %q, %q; want Key %q and %q", e.Key, err, tt.key, tt.msg)
			}
			if errors.Is(err, ErrUnknownConfig) != tt.unknown || errors.Is(err, ErrInvalidConfig) == tt.unknown {
				t.Errorf("%v: unknown = %v, want %v", err, errors.Is(err, ErrUnknownConfig), tt.unknown)
			}
			if tt.fromFile && !strings.Contains(err.Error(), "(in "+file+")") {
				t.Errorf("%v does not name the file", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want os.ErrNotExist", err)
	}
}

func TestSetLeavesBrokerUnchangedOnError(t *testing.T) {
	b := Default()
	if err := b.Set("num.partitions", "4"); err != nil {
		t.Fatal(err)
	}
	before := *b
	beforeRaw := maps.Clone(b.Raw)
	if err := b.Set("broker.heartbeat.interval.ms", "10000"); err == nil {
		t.Fatal("heartbeat above session timeout was accepted")
	}
	if err := b.Set("listeners", "SSL://:1"); err == nil {
		t.Fatal("an SSL listener was accepted")
	}
	if b.NumPartitions != 4 || b.BrokerHeartbeatIntervalMs != before.BrokerHeartbeatIntervalMs ||
		b.Listen != before.Listen || !reflect.DeepEqual(b.Raw, beforeRaw) || b.Explicit("listeners") {
		t.Errorf("a failed Set changed the broker")
	}
	if err := b.Set("node.id", "5"); err != nil || b.NodeID != 5 || b.IsController() != true {
		t.Errorf("Set(node.id) = %v, NodeID %d", err, b.NodeID)
	}
}

func TestParseVoters(t *testing.T) {
	vs, err := ParseVoters(" 1@a:9093, 2@[::1]:9093 ,3@c.example:1")
	want := []Voter{{1, "a:9093"}, {2, "[::1]:9093"}, {3, "c.example:1"}}
	if err != nil || !reflect.DeepEqual(vs, want) {
		t.Fatalf("got %v, %v; want %v", vs, err, want)
	}
	if vs, err := ParseVoters(""); err != nil || vs != nil {
		t.Errorf("empty: got %v, %v", vs, err)
	}
	for _, bad := range []string{"1", "@a:1", "-1@a:1", "1@a", "1@a:1,2@a:1", "1@a:1,1@b:1", "1@a:x", "99999999999@a:1"} {
		_, err := ParseVoters(bad)
		var e *Error
		if !errors.As(err, &e) || e.Key != "controllers" || e.Value != bad {
			t.Errorf("%q: got %v, want an *Error for controllers", bad, err)
		}
	}
}

func TestBrokerOnlyNode(t *testing.T) {
	b, err := Load("", []string{"node.id=4", "controllers=1@a:1,2@b:1,3@c:1"})
	if err != nil {
		t.Fatal(err)
	}
	if b.IsController() || len(b.QuorumVoters()) != 3 {
		t.Errorf("IsController %v, voters %v", b.IsController(), b.QuorumVoters())
	}
}
