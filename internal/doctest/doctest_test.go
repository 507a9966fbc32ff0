package doctest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/server"
)

// docCommand is one `runnel ...` line of a page's code block.
type docCommand struct {
	where string // FILE:LINE
	text  string // the command as shown (continuations joined, comment cut)
	stdin string // what a `printf '...' |` or `echo ... |` before it feeds it
	args  []string
}

// skipped lists, per command as the docs show it, why the test does not run it and
// what runs it instead. Each is still checked for its command and flags.
var skipped = map[string]string{
	"runnel server":                "starts a node on the default ports: this test runs the same server in-process (clustertest.StartOne), scripts/readme-tour.sh the binary",
	"runnel dev-cluster --nodes 3": "starts three processes on the README's ports: scripts/readme-tour.sh runs it (by hand: the ports must be free)",
	"runnel -b 127.0.0.1:9092 topic create demo -p 6 -r 3 -c min.insync.replicas=2": "needs three nodes (-r 3): scripts/readme-tour.sh runs it on the dev cluster",
	"runnel -b 127.0.0.1:9092 cluster status":                                       "the dev cluster's status: scripts/readme-tour.sh runs it",
	"runnel server --node-id 4 --controllers 1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093 --listen 10.0.0.4:9092 --controller-listen 10.0.0.4:9093 --data-dir /var/lib/runnel": "addresses of another network; internal/clustertest's AddNode starts nodes so",
	"runnel cluster add-voter 4":                        "needs a fourth node: internal/clustertest TestReplaceVoter",
	"runnel cluster remove-voter 3":                     "needs three voters: internal/clustertest TestDecommissionVoter",
	"runnel cluster decommission 3 --throttle 52428800": "needs several nodes: internal/clustertest TestDecommissionVoter and TestReassignCLI",
	"runnel cluster decommission 3":                     "needs several nodes: internal/clustertest TestDecommissionVoter",
	"runnel mirror run --source east:9092 --target west:9092 --name dr --topics 'orders,payments,audit\\..*' --groups 'billing.*' --http-listen :9650":                                             "needs two clusters and runs until SIGTERM: internal/clustertest mirror tests",
	"runnel mirror run --source east:9092 --target west:9092 --name east-west --source-alias east --topics 'orders' --groups '.*'":                                                                 "needs two clusters and runs until SIGTERM: internal/clustertest mirror tests",
	"runnel mirror status --target west:9092 --name east-west":                                                                                                                                     "needs a running mirror: internal/cli TestMirrorFailoverAndTranslateCommands",
	"runnel mirror failover --target west:9092 --name east-west --all-groups --dry-run":                                                                                                            "needs a running mirror: internal/cli TestMirrorFailoverAndTranslateCommands",
	"runnel mirror failover --target west:9092 --name east-west --all-groups":                                                                                                                      "needs a running mirror: internal/cli TestMirrorFailoverAndTranslateCommands",
	"runnel mirror run --source east:9092 --target west:9092 --name e2w --source-alias east --topics 'orders'":                                                                                     "needs two clusters: internal/clustertest mirror tests",
	"runnel mirror run --source west:9092 --target east:9092 --name w2e --source-alias west --topics 'orders'":                                                                                     "needs two clusters: internal/clustertest mirror tests",
	"runnel mirror run --name dr --source 10.0.0.1:9094 --target 10.1.0.1:9092 --source-command-config source.properties --source-X sasl.password=\"$SRC_PW\"":                                     "needs a secured source cluster: internal/interop TestSecurity/Mirror",
	"runnel mirror status --name dr --target 10.1.0.1:9092":                                                                                                                                        "needs a running mirror: internal/cli TestMirrorFailoverAndTranslateCommands",
	"runnel topic list -b 127.0.0.1:9094 -X security.protocol=sasl_ssl -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username=alice -X sasl.password=alice-secret -X ssl.ca.location=/etc/runnel/ca.pem": "needs a SASL_SSL listener and the page's CA: internal/interop TestSecurity/RunnelCLI",
	"runnel produce orders -b 127.0.0.1:9094 --command-config alice.properties -X sasl.password=\"$PW\"":                                                                                           "needs a SASL_SSL listener and a password from the environment: internal/interop TestSecurity/RunnelCLI",
	"runnel consume orders -b 127.0.0.1:9094 --command-config alice.properties -X sasl.password=\"$PW\" --from-beginning -n 1":                                                                     "needs a SASL_SSL listener and a password from the environment: internal/interop TestSecurity/RunnelCLI",
	"runnel topic list -b 127.0.0.1:9095 -X security.protocol=ssl -X ssl.ca.location=/etc/runnel/ca.pem -X ssl.certificate.location=alice.pem -X ssl.key.location=alice-key.pem":                   "needs an mTLS listener and the page's certificates: internal/interop TestSecurity/FranzMTLS",
	"runnel user create ingest --mechanism SCRAM-SHA-512 --iterations 8192":                                                                                                                        "reads the password from $INGEST_PW: internal/cli TestUserCommands",
	"runnel consume orders --group g1 -n 1 -b 127.0.0.1:9094 --command-config alice.properties":                                                                                                    "a denial on a SASL listener: internal/cli TestDenialsNameTheACL",
	"runnel produce events --rate 1000": "", // run: an empty stdin ends it at once
}

// synopsis tells a usage synopsis (`[--json]`, `a|b`, FILE, ID) from a command line.
var synopsis = regexp.MustCompile(`\[|\]|\s\|\s|\b(FILE|ID|BYTES_PER_SEC|RE|T|P|U|C|N)\b|ID,ID`)

// TestDocCommands checks every command of README.md and docs/*.md and runs the ones
// one node can serve.
func TestDocCommands(t *testing.T) {
	cmds := readCommands(t)
	if len(cmds) < 40 {
		t.Fatalf("found only %d runnel commands in the docs: is the extraction broken?", len(cmds))
	}
	// ACLs on (the ACL pages' commands), the test's own client a super user.
	b := clustertest.StartOne(t, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS", "group.initial.rebalance.delay.ms=0")
	ran, skips := 0, 0
	var links linkClusters // the link commands' own two clusters
	for _, c := range cmds {
		if err := checkSyntax(c); err != nil {
			t.Errorf("%s: %s: %v", c.where, c.text, err)
			continue
		}
		if synopsis.MatchString(stripQuoted(c.text)) {
			continue // a synopsis: its command and flags are checked
		}
		if why := skipped[c.text]; why != "" {
			skips++
			t.Logf("skipped %s: %s: %s", c.where, c.text, why)
			continue
		}
		args := withBootstrap(c.args, b)
		if len(c.args) > 0 && c.args[0] == "link" {
			var err error
			if args, err = links.args(t, c); err != nil {
				t.Errorf("%s: %s: %v", c.where, c.text, err)
				continue
			}
		}
		var stdout, stderr strings.Builder
		if code := cli.MainIO(args, strings.NewReader(c.stdin), &stdout, &stderr); code != 0 {
			t.Errorf("%s: %s: exit %d\nstdout: %s\nstderr: %s", c.where, c.text, code, stdout.String(), stderr.String())
			continue
		}
		if c.args[0] == "link" {
			t.Logf("ran %s: %s on the link clusters:\n%s", c.where, c.text, stdout.String())
		}
		ran++
	}
	t.Logf("%d commands in the docs: %d run, %d skipped (reasons above), the rest synopses", len(cmds), ran, skips)
	for text, why := range skipped {
		if why != "" && !slices.ContainsFunc(cmds, func(c docCommand) bool { return c.text == text }) {
			t.Errorf("skipped lists %q, which no page shows any more: remove it", text)
		}
	}
}

// checkSyntax checks that a command names an existing command, and that its flags
// exist (and, for a command line, parse and leave the arguments the command takes).
func checkSyntax(c docCommand) error {
	root := cli.NewRoot(server.NewCommand(), server.NewDevClusterCommand())
	cmd, rest, err := root.Find(c.args)
	if err != nil {
		return err
	}
	if cmd == root {
		return errors.New("no such command")
	}
	if synopsis.MatchString(stripQuoted(c.text)) {
		for _, w := range rest {
			w = strings.Trim(w, "[]()")
			name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			switch {
			case strings.HasPrefix(w, "--") && name != "" && cmd.Flags().Lookup(name) == nil:
				return fmt.Errorf("unknown flag --%s", name)
			case strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && len(name) == 1 && cmd.Flags().ShorthandLookup(name) == nil:
				return fmt.Errorf("unknown flag -%s", name)
			}
		}
		return nil
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return validateArgs(cmd)
}

func validateArgs(cmd *cobra.Command) error {
	if cmd.Args == nil {
		return nil
	}
	return cmd.Args(cmd, cmd.Flags().Args())
}

// withBootstrap points a command at the test's node: its -b (the docs' default
// address) is replaced.
func withBootstrap(args []string, b string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-b" || args[i] == "--bootstrap" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return append(out, "-b", b)
}

// readCommands reads the runnel commands of README.md and docs/*.md, in page order.
func readCommands(t *testing.T) []docCommand {
	t.Helper()
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	var cmds []docCommand
	for _, p := range pages {
		cmds = append(cmds, pageCommands(t, p)...)
	}
	return cmds
}

// pageCommands reads one page: in a fenced code block, a line that runs runnel
// (`runnel ...`, `$ runnel ...`, `printf '...' | runnel ...`), continuations joined.
func pageCommands(t *testing.T, page string) []docCommand {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []docCommand
	sc := bufio.NewScanner(f)
	inBlock, n := false, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		start := n
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		line = strings.TrimPrefix(line, "$ ")
		if c, ok := parseLine(line); ok {
			c.where = filepath.Base(page) + ":" + strconv.Itoa(start)
			cmds = append(cmds, c)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// parseLine splits a shell line into words (quotes as sh takes them, a comment cut),
// and the runnel command of it with what feeds its stdin.
func parseLine(line string) (docCommand, bool) {
	words, cut := shellWords(line)
	var c docCommand
	pipe := slices.Index(words, "|")
	if pipe >= 0 {
		c.stdin = feed(words[:pipe])
		words = words[pipe+1:]
	}
	if len(words) == 0 || words[0] != "runnel" {
		return c, false
	}
	c.args = words[1:]
	c.text = strings.Join(strings.Fields(cut[strings.Index(cut, "runnel "):]), " ")
	return c, true
}

// feed is what printf FORMAT or echo WORDS writes (the docs' ways to give stdin).
func feed(words []string) string {
	switch {
	case len(words) >= 2 && words[0] == "printf":
		return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `%s`, "").Replace(words[1])
	case len(words) >= 1 && words[0] == "echo":
		return strings.Join(words[1:], " ") + "\n"
	}
	return ""
}

// shellWords splits s as sh would (single quotes literal, double quotes and
// backslashes; | a word of its own; # starts a comment after a blank), and returns
// the line without its comment.
func shellWords(s string) ([]string, string) {
	var words []string
	var w strings.Builder
	inWord, quote := false, byte(0)
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				w.WriteByte(ch)
			}
		case quote == '"':
			if ch == '"' {
				quote = 0
			} else {
				w.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inWord:
			flush()
			return words, strings.TrimSpace(s[:i])
		case ch == '|':
			flush()
			words = append(words, "|")
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return words, strings.TrimSpace(s)
}

// stripQuoted is s without its quoted parts (a regex argument's | is not a synopsis).
func stripQuoted(s string) string {
	return regexp.MustCompile(`'[^']*'|"[^"]*"`).ReplaceAllString(s, "''")
}
