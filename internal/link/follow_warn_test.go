package link

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// TestSyncerWarningsNameTheSource: the syncer's warnings (no source client, the
// source refusing DescribeConfigs or DescribeAcls) name the link and its source.
func TestSyncerWarningsNameTheSource(t *testing.T) {
	var buf bytes.Buffer
	s := &syncer{m: &Manager{logger: slog.New(slog.NewTextHandler(&buf, nil))},
		link: &metadata.Link{Name: "dr", Source: "src1:9092,src2:9092"}, warned: map[string]bool{}}
	s.warnOnce("acls", "link: cannot read the source's ACLs; --sync-acls does nothing until it can")
	s.warnOnce("acls", "link: cannot read the source's ACLs; --sync-acls does nothing until it can")
	out := buf.String()
	if !strings.Contains(out, "link=dr") || !strings.Contains(out, "source=src1:9092,src2:9092") || strings.Count(out, "\n") != 1 {
		t.Fatalf("warning: %q, want one line naming link=dr and source=src1:9092,src2:9092", out)
	}
}
