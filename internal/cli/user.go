package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() { register(newUserCommand) }

const userHelp = `
Users are SCRAM credentials kept in the cluster's metadata quorum (Kafka's
AlterUserScramCredentials and DescribeUserScramCredentials): per mechanism a salt, an
iteration count and two derived keys. The password itself is stored nowhere: this
command salts and hashes it (PBKDF2) before sending it. SASL/PLAIN logins check the
same credentials (the SCRAM-SHA-512 one, else the SCRAM-SHA-256 one).`

func newUserCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, delete and list SCRAM users (SASL SCRAM-SHA-256/512 and PLAIN)",
		Long:  "Create, delete and list SCRAM users.\n" + userHelp,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newUserCreate(conn), newUserDelete(conn), newUserList(conn))
	return cmd
}

// userMechanisms turns --mechanism into kadm's mechanisms; none given means both.
func userMechanisms(names []string) ([]kadm.ScramMechanism, error) {
	if len(names) == 0 {
		return []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256}, nil
	}
	var out []kadm.ScramMechanism
	for _, n := range names {
		switch strings.ToUpper(n) {
		case "SCRAM-SHA-256":
			out = append(out, kadm.ScramSha256)
		case "SCRAM-SHA-512":
			out = append(out, kadm.ScramSha512)
		default:
			return nil, usageErrorf("unknown --mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", n)
		}
	}
	return out, nil
}

// readPassword takes the first line of stdin, for a password kept off the command line.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	if line = strings.TrimRight(line, "\r\n"); line == "" {
		return "", usageErrorf("no password: give --password P or write it on stdin")
	}
	return line, nil
}

// alterUser sends one alteration per request: Kafka's controller refuses a user named
// twice in one request, so each mechanism of a user is its own request.
func alterUser(cmd *cobra.Command, adm *kadm.Client, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) error {
	res, err := adm.AlterUserSCRAMs(cmd.Context(), del, up)
	if err != nil {
		return err
	}
	for _, r := range res {
		if err := withMessage(r.Err, r.ErrMessage); err != nil {
			return err
		}
	}
	return nil
}

func newUserCreate(conn *connFlags) *cobra.Command {
	var password string
	var mechanisms []string
	var iterations int32
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user, or set the password of an existing one",
		Long: "Create user NAME with a credential for each mechanism (both SCRAM-SHA-256 and\n" +
			"SCRAM-SHA-512 unless --mechanism says), or replace the credentials of an existing\n" +
			"user. Without --password the password is the first line of stdin, which keeps it\n" +
			"out of the shell history and the process list. The user can log in on every node\n" +
			"when the command returns.\n" + userHelp,
		Example: "  runnel user create alice --password alice-secret\n" +
			"  printf '%s\\n' \"$PW\" | runnel user create ingest --mechanism SCRAM-SHA-512",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			mechs, err := userMechanisms(mechanisms)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("password") {
				if password, err = readPassword(cmd.InOrStdin()); err != nil {
					return err
				}
			} else if password == "" {
				return usageErrorf("--password must not be empty")
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				for _, m := range mechs {
					up := kadm.UpsertSCRAM{User: name, Mechanism: m, Iterations: iterations, Password: password}
					if err := alterUser(cmd, adm, nil, []kadm.UpsertSCRAM{up}); err != nil {
						return fmt.Errorf("create user %q (%s): %w", name, m, err)
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created user %q (%s).\n", name, mechanismList(mechs))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&password, "password", "", "the password (default: the first line of stdin)")
	cmd.Flags().StringArrayVar(&mechanisms, "mechanism", nil, "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default both)")
	cmd.Flags().Int32Var(&iterations, "iterations", 4096, "PBKDF2 iterations, 4096 to 16384")
	return cmd
}

func newUserDelete(conn *connFlags) *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user's credentials (every mechanism unless --mechanism says)",
		Long: "Delete user NAME's credentials: those of the mechanisms given, or all it has.\n" +
			"Connections already authenticated as the user stay open; new logins fail.\n" + userHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return withAdmin(conn, func(adm *kadm.Client) error {
				mechs, err := userMechanisms(mechanisms)
				if err != nil {
					return err
				}
				if len(mechanisms) == 0 {
					if mechs, err = userHas(cmd, adm, name); err != nil {
						return fmt.Errorf("delete user %q: %w", name, err)
					}
				}
				for _, m := range mechs {
					if err := alterUser(cmd, adm, []kadm.DeleteSCRAM{{User: name, Mechanism: m}}, nil); err != nil {
						return fmt.Errorf("delete user %q (%s): %w", name, m, err)
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted user %q (%s).\n", name, mechanismList(mechs))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&mechanisms, "mechanism", nil, "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default every one the user has)")
	return cmd
}

// userHas returns the mechanisms name has a credential for; an unknown user is an error.
func userHas(cmd *cobra.Command, adm *kadm.Client, name string) ([]kadm.ScramMechanism, error) {
	got, err := adm.DescribeUserSCRAMs(cmd.Context(), name)
	if err != nil {
		return nil, err
	}
	d, ok := got[name]
	if !ok {
		return nil, fmt.Errorf("%w: the cluster did not answer for the user", kerr.UnknownServerError)
	}
	if err := withMessage(d.Err, d.ErrMessage); err != nil {
		return nil, err
	}
	var out []kadm.ScramMechanism
	for _, c := range d.CredInfos {
		out = append(out, c.Mechanism)
	}
	return out, nil
}

func mechanismList(ms []kadm.ScramMechanism) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// userRow is one user in `user list`; the JSON field names are stable.
type userRow struct {
	User       string          `json:"user"`
	Mechanisms []userMechanism `json:"mechanisms"`
}

type userMechanism struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func newUserList(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "List users and their mechanisms (every user, or those named)",
		Long: "List users with their SCRAM mechanisms and iteration counts (never salts or keys).\n" +
			"A user named that does not exist is an error.\n" + userHelp,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				got, err := adm.DescribeUserSCRAMs(cmd.Context(), args...)
				if err != nil {
					return fmt.Errorf("list users: %w", err)
				}
				rows := []userRow{}
				for _, d := range got.Sorted() {
					if err := withMessage(d.Err, d.ErrMessage); err != nil {
						return fmt.Errorf("user %q: %w", d.User, err)
					}
					r := userRow{User: d.User}
					for _, c := range d.CredInfos {
						r.Mechanisms = append(r.Mechanisms, userMechanism{c.Mechanism.String(), c.Iterations})
					}
					rows = append(rows, r)
				}
				return printUsers(cmd.OutOrStdout(), rows, asJSON)
			})
		},
	}
	out.add(cmd)
	return cmd
}

func printUsers(w io.Writer, rows []userRow, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "USER\tMECHANISMS")
	for _, r := range rows {
		ms := make([]string, len(r.Mechanisms))
		for i, m := range r.Mechanisms {
			ms[i] = fmt.Sprintf("%s (iterations=%d)", m.Mechanism, m.Iterations)
		}
		fmt.Fprintf(tw, "%s\t%s\n", r.User, strings.Join(ms, ", "))
	}
	return tw.Flush()
}
