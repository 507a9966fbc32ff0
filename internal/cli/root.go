package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit statuses fixed by INTERFACE.md.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Main runs the runnel command line with args (without the program name) on the
// process's standard streams and returns the exit status. extra commands (the server)
// are added to the root.
func Main(args []string, extra ...*cobra.Command) int {
	return MainIO(args, os.Stdin, os.Stdout, os.Stderr, extra...)
}

// MainIO is Main with injectable streams, for tests and embedding.
func MainIO(args []string, stdin io.Reader, stdout, stderr io.Writer, extra ...*cobra.Command) int {
	root := NewRoot(extra...)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, err := root.ExecuteContextC(ctx)
	return report(stderr, cmd, err)
}

// registered holds the top-level commands that files of this package add with
// register from an init function, so that a new command lives in its own file(s).
var registered []func() *cobra.Command

// register adds a top-level command to every root NewRoot builds. Call it from init.
func register(newCommand func() *cobra.Command) { registered = append(registered, newCommand) }

// NewRoot builds the `runnel` command tree: the client commands plus extra.
func NewRoot(extra ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "runnel",
		Short:         "Runnel: a Kafka-compatible replicated commit log",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE:          groupRunE,
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newTopicCommand(), newProduceCommand(), newConsumeCommand(),
		newGroupCommand(), newClusterCommand(), newBenchCommand(), newVersionCommand())
	for _, c := range registered {
		root.AddCommand(c())
	}
	setVersionFlag(root)
	root.AddCommand(extra...)
	return root
}

// usageError marks bad usage: exit status 2 and a hint to read --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// cobraUsagePrefixes are the starts of the errors cobra returns for bad usage without
// passing them through the flag error function.
var cobraUsagePrefixes = []string{
	"unknown command", "required flag", "if any flags in the group",
	"at least one of the flags", "unknown shorthand flag", "unknown flag",
}

func isUsage(err error) bool {
	var ue usageError
	if errors.As(err, &ue) {
		return true
	}
	// A property given on the command line (runnel server --set KEY=VALUE) that is
	// malformed, unknown or invalid is bad usage, as a bad flag is; a bad line of a
	// --config file is not (exit 1).
	if ce := (*config.Error)(nil); errors.As(err, &ce) && (ce.Origin == "--set" || ce.Key == "--set") {
		return true
	}
	for _, p := range cobraUsagePrefixes {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// report prints err as one line on stderr and returns the exit status for it.
func report(stderr io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	err = explainDenial(cmd, err)
	msg := oneLine(err.Error())
	if isUsage(err) {
		path := "runnel"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "runnel: %s\nRun '%s --help' for usage.\n", msg, path)
		return exitUsage
	}
	fmt.Fprintf(stderr, "runnel: %s\n", msg)
	return exitFailure
}

// oneLine folds a multi-line error into one line.
func oneLine(s string) string {
	var parts []string
	for l := range strings.Lines(s) {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// groupRunE runs for a command that only groups subcommands: with no argument it is
// a usage error (a subcommand is missing), with one it names the unknown subcommand.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageErrorf("missing subcommand, one of: %s", subcommandNames(cmd))
	}
	return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
}

// noArgs, exactArgs wrap cobra's validators so that their errors are usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.HasSubCommands() {
		return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return wrapUsage(cobra.NoArgs(cmd, args))
}

// exactArgs takes the names of the n arguments from cmd.Use (the upper-case words
// after the command's name: "create NAME" under topic is a topic name), so that a
// missing one reads "missing topic name", not cobra's "accepts 1 arg(s), received 0".
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		names := argNames(cmd)
		switch {
		case len(args) < n && len(args) < len(names):
			return usageErrorf("missing %s", names[len(args)])
		case len(args) > n:
			return usageErrorf("unexpected argument %q: %s takes %s", args[n], cmd.CommandPath(), describeArgs(names, n))
		}
		return wrapUsage(cobra.ExactArgs(n)(cmd, args))
	}
}

// minArgs is exactArgs for commands that take n or more arguments (NAME...).
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if names := argNames(cmd); len(args) < n && len(args) < len(names) {
			return usageErrorf("missing %s", names[len(args)])
		}
		return wrapUsage(cobra.MinimumNArgs(n)(cmd, args))
	}
}

// argNames reads the positional arguments from cmd.Use: NAME is the parent's kind of
// name ("topic name" under topic), TOPIC "topic name", GROUP "group name".
func argNames(cmd *cobra.Command) []string {
	var names []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		w = strings.TrimSuffix(w, "...")
		if w == "" || strings.ToUpper(w) != w || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "[]|=") {
			continue
		}
		kind := strings.ToLower(w)
		if w == "NAME" && cmd.HasParent() {
			kind = cmd.Parent().Name()
		}
		names = append(names, kind+" name")
	}
	return names
}

func describeArgs(names []string, n int) string {
	if len(names) < n || n == 0 {
		return fmt.Sprintf("%d argument(s)", n)
	}
	if n == 1 {
		return "one " + names[0]
	}
	return strings.Join(names[:n], " and ")
}

func wrapUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func subcommandNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return strings.Join(names, ", ")
}

// defaultBootstrap is where client commands look for the cluster without -b.
const defaultBootstrap = "localhost:9092"

// connFlags are the connection flags every client command takes.
type connFlags struct {
	bootstrap string         // -b: HOST:PORT[,HOST:PORT...]
	security  *securityFlags // -X KEY=VALUE, --command-config FILE (security.go); nil: plaintext
	clientID  string         // --client-id; "" is defaultClientID
	local     localAddr      // the local address of the first connection, for denials (denial.go)
}

// defaultClientID is the client id of the CLI's requests without --client-id.
const defaultClientID = "runnel-cli"

func addConnFlags(fs *pflag.FlagSet) *connFlags { return addConnFlagsAs(fs, defaultClientID, true) }

// addConnFlagsAs is addConnFlags with the client id id by default, and without the
// --client-id flag unless withFlag (runnel quota's --client-id names a quota entity).
func addConnFlagsAs(fs *pflag.FlagSet, id string, withFlag bool) *connFlags {
	c := &connFlags{bootstrap: defaultBootstrap, clientID: id}
	fs.VarP(&bootstrapValue{c}, "bootstrap", "b", "Kafka listeners to bootstrap from, HOST:PORT[,HOST:PORT...]")
	if withFlag {
		fs.StringVar(&c.clientID, "client-id", id, "the client `ID` of the requests (client-id quotas, the node's logs and group members show it)")
	}
	c.security = addSecurityFlags(fs, "", "")
	return c
}

// baseOpts are the kgo options of every client of the cluster: the seed brokers, the
// client id and the security settings. Every client a command builds starts from
// them, so that -X reaches each one (the producers of bench and produce included).
func (c *connFlags) baseOpts() ([]kgo.Opt, error) {
	seeds, err := c.seeds()
	if err != nil {
		return nil, err
	}
	sec, err := c.security.options()
	if err != nil {
		return nil, err
	}
	id := c.clientID
	if id == "" {
		id = defaultClientID
	}
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(id), kgo.WithHooks(&c.local)}, sec...), nil
}

// seeds splits and checks --bootstrap.
func (c *connFlags) seeds() ([]string, error) {
	var seeds []string
	for s := range strings.SplitSeq(c.bootstrap, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, usageErrorf("bad --bootstrap %q: want HOST:PORT", s)
		}
		seeds = append(seeds, s)
	}
	if len(seeds) == 0 {
		return nil, usageErrorf("--bootstrap is empty")
	}
	return seeds, nil
}

// client builds a kgo client for the cluster; the caller closes it.
func (c *connFlags) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base, err := c.baseOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
}

// admin builds a kadm client for the cluster; the caller closes it.
func (c *connFlags) admin() (*kadm.Client, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// withMessage adds the broker's error message, if any, to a Kafka error code: the
// message is the cause (`invalid config: retention.ms: "abc" is not an integer`), the
// code's name follows it in parentheses, and its generic description is left out.
func withMessage(err error, msg string) error {
	if err == nil || msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%w: %s", err, msg)
	}
	// A broker that puts the code's own text in front of its message (older Runnel).
	for _, prefix := range []string{ke.Error() + ": ", ke.Message + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return &brokerError{code: ke, msg: msg}
}

// brokerError is a Kafka error code with the broker's message.
type brokerError struct {
	code *kerr.Error
	msg  string
}

func (e *brokerError) Error() string { return e.msg + " (" + e.code.Message + ")" }
func (e *brokerError) Unwrap() error { return e.code }

// newTable returns a tabwriter for human tables; the caller flushes it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// writeJSON writes v as indented JSON, for --json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// dash renders a missing number as "-".
func dash(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// joinInt32s renders replica lists as 1,2,3.
func joinInt32s(ns []int32) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}
