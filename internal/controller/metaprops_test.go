package controller

import (
	"testing"
)

func TestMetaPropertiesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if p, err := readMetaProperties(dir); err != nil || p.hasNodeID || p.clusterID != "" {
		t.Fatalf("missing file: %+v %v", p, err)
	}
	want := metaProperties{nodeID: 3, hasNodeID: true, clusterID: "abc_-DEF"}
	if err := writeMetaProperties(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, err := readMetaProperties(dir); err != nil || got != want {
		t.Fatalf("read back %+v %v, want %+v", got, err, want)
	}
}

func TestParseMetaProperties(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want metaProperties
		ok   bool
	}{
		{"#Tue Jan 01\n! comment\n\ncluster.id = x\nnode.id=4\nversion=1\n", metaProperties{4, true, "x"}, true},
		{"broker.id=2\nversion=0\n", metaProperties{2, true, ""}, true},
		{"node.id=two\n", metaProperties{}, false},
		{"version=2\n", metaProperties{}, false},
		{"garbage\n", metaProperties{}, false},
	} {
		got, err := parseMetaProperties([]byte(tc.in))
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parse %q = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
