package server

import "testing"

func TestDevNodesLayout(t *testing.T) {
	ns := devNodes(3, 9092, "dev")
	want := []struct{ kafka, raft, http, dir string }{
		{"127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094", "dev/node-1"},
		{"127.0.0.1:9102", "127.0.0.1:9103", "127.0.0.1:9104", "dev/node-2"},
		{"127.0.0.1:9112", "127.0.0.1:9113", "127.0.0.1:9114", "dev/node-3"},
	}
	for i, w := range want {
		n := ns[i]
		if n.id != i+1 || n.kafka != w.kafka || n.raft != w.raft || n.http != w.http || n.dir != w.dir {
			t.Errorf("node %d = %+v, want %+v", i+1, *n, w)
		}
	}
}
