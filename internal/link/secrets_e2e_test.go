package link_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/testutil"
)

// TestLinkSourcePasswordByReference: a link to a SASL/PLAIN source whose password is
// given as ${env:...} mirrors (the node resolves it), its metadata keeps the reference
// and never the password, and a reference this node cannot resolve shows as the
// partitions' error in link status, naming the reference and not the secret. A plain
// password is still taken, with a warning on stderr.
func TestLinkSourcePasswordByReference(t *testing.T) {
	const pass = "s3cret-Link-Pa55"
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"), kfake.EnableSASL(), kfake.Superuser("PLAIN", "linker", pass))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	seeds := []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...), kgo.SASL(plain.Auth{User: "linker", Pass: pass}.AsMechanism())}
	produceMix(t, seeds, "events", 600)
	t.Setenv("RUNNEL_TEST_LINK_PASSWORD", pass) // the destination node runs in this process
	dst := startNode(t)
	boot := strings.Join(src.ListenAddrs(), ",")
	secured := []string{"--source-X", "security.protocol=sasl_plaintext", "--source-X", "sasl.mechanism=PLAIN", "--source-X", "sasl.username=linker"}

	var out, errb bytes.Buffer
	args := append([]string{"link", "create", "byref", "--source", boot, "--topics", "events", "-b", dst.Bootstrap(),
		"--source-X", "sasl.password=${env:RUNNEL_TEST_LINK_PASSWORD}"}, secured...)
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("link create: exit %d: %s%s", code, errb.String(), out.String())
	}
	if strings.Contains(errb.String(), "warning") {
		t.Errorf("link create warned of a password given by reference: %s", errb.String())
	}
	scl, err := kgo.NewClient(seeds...)
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	awaitCaughtUp(t, kadm.NewClient(scl), dst.Admin(t), "events")

	// A reference the node asked cannot resolve: the create is refused, naming it.
	out.Reset()
	errb.Reset()
	args = append([]string{"link", "create", "unresolved", "--source", boot, "--topics", "events", "-b", dst.Bootstrap(),
		"--source-X", "sasl.password=${env:RUNNEL_TEST_LINK_UNSET}"}, secured...)
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "${env:RUNNEL_TEST_LINK_UNSET}") || !strings.Contains(errb.String(), "sasl.password") {
		t.Errorf("link create with an unset variable: exit %d, stderr %q: want a refusal naming the property and the reference", code, errb.String())
	}
	t.Logf("link create with an unset variable: %s", strings.TrimSpace(errb.String()))

	// A plain password is taken, with a warning naming the property (this source
	// cannot be reached: the create fails after the warning, and nothing is kept).
	out.Reset()
	errb.Reset()
	args = append([]string{"link", "create", "plain", "--source", "127.0.0.1:1", "--topics", "events", "-b", dst.Bootstrap(),
		"--source-X", "sasl.password=" + pass}, secured...)
	cli.MainIO(args, strings.NewReader(""), &out, &errb)
	if !strings.Contains(errb.String(), "sasl.password") || !strings.Contains(errb.String(), "${file:") || strings.Contains(errb.String(), pass) {
		t.Errorf("link create with a plain password: stderr %q, want a warning naming sasl.password and recommending a reference", errb.String())
	}
	t.Logf("link create with a plain password: %s", strings.TrimSpace(errb.String()))

	for _, a := range [][]string{{"link", "list", "--json"}, {"link", "list"}, {"link", "status", "byref", "--json"}, {"link", "status", "byref"}} {
		if o := runCLI(t, append(a, "-b", dst.Bootstrap())...); strings.Contains(o, pass) {
			t.Errorf("runnel %s shows the password: %s", strings.Join(a, " "), o)
		}
	}
	// The metadata log, as stored on the node's disk, holds the reference, never the
	// password.
	var sawRef bool
	err = filepath.WalkDir(filepath.Join(dst.Node(1).DataDir, "__raft"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(pass)) {
			t.Errorf("metadata file %s holds the password", path)
		}
		sawRef = sawRef || bytes.Contains(b, []byte("${env:RUNNEL_TEST_LINK_PASSWORD}"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawRef {
		t.Errorf("no metadata file under %s holds the reference: the check above saw nothing", dst.Node(1).DataDir)
	}

	// Restarted without the variable, the node cannot resolve the reference: the link
	// cannot start there (no source client is built, nothing is fetched: the source's
	// end is unknown), and the partition says why, naming the node, the link, the
	// property and the reference, not the secret.
	os.Unsetenv("RUNNEL_TEST_LINK_PASSWORD") // t.Setenv above restores it at the end
	if err := dst.Stop(1); err != nil {
		t.Fatal(err)
	}
	dst.Restart(1)
	testutil.Eventually(t, 20*time.Second, func() error {
		st := status(t, dst.Bootstrap(), "byref")
		if len(st.Partitions) != 1 || !strings.Contains(st.Partitions[0].Error, "${env:RUNNEL_TEST_LINK_PASSWORD}") ||
			!strings.Contains(st.Partitions[0].Error, "sasl.password") || !strings.Contains(st.Partitions[0].Error, "link byref") ||
			!strings.HasPrefix(st.Partitions[0].Error, "cannot start on node 1: ") || st.Partitions[0].SourceEnd != -1 {
			return fmt.Errorf("status of link byref: %+v, want source_end -1 and the partition's error to say the link cannot start on node 1, naming the link, the property and the reference", st.Partitions)
		}
		if strings.Contains(st.Partitions[0].Error, pass) {
			t.Fatalf("status shows the password: %s", st.Partitions[0].Error)
		}
		t.Logf("status of link byref on a node without the variable: %s", st.Partitions[0].Error)
		return nil
	})
	// Nothing is copied, and the lag says so (INTERFACE.md: while the source cannot be
	// fetched, lag_seconds grows), in status and on /metrics.
	testutil.Eventually(t, 10*time.Second, func() error {
		q := status(t, dst.Bootstrap(), "byref").Partitions[0]
		_, seconds, ok := linkMetrics(t, dst, 1, "byref", "events", 0)
		if q.LagSeconds < 1 || !ok || seconds < 1 {
			return fmt.Errorf("lag_seconds %.2f in status, %.2f on /metrics (exported: %v): want both at least 1 s and growing", q.LagSeconds, seconds, ok)
		}
		return nil
	})
}
