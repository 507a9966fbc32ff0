package cli

// runnel acl: Kafka's CreateAcls, DescribeAcls and DeleteAcls through kadm, with
// kafka-acls.sh's model (a principal allowed or denied an operation on a resource,
// from a host).

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(newACLCommand) }

const aclHelp = `
An ACL allows (--allow) or denies (--deny) a principal (--principal User:NAME; User:*
is every user; without authentication every client is User:ANONYMOUS) one operation
(--operation) on one resource: a topic (--topic), a group (--group), a transactional id
(--transactional-id) or the cluster (--cluster), from one host (--host IP, default *,
any). A resource name is literal, or with --prefixed a prefix of the names it covers;
the literal name * covers every resource of its type. DENY wins over ALLOW; ALL
covers every operation; READ, WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS
implies DESCRIBE_CONFIGS. ACLs are enforced once authorizer.class.name is set.

Operations: ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.`

func newACLCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs (Kafka's authorization model)",
		Long:  "Create, list and delete ACLs (Kafka's CreateAcls, DescribeAcls and DeleteAcls).\n" + aclHelp,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newACLCreate(conn), newACLList(conn), newACLDelete(conn))
	return cmd
}

// aclFlags are the flags every acl subcommand takes. For create they name one ACL;
// for list and delete each one left out matches anything.
type aclFlags struct {
	principal, operation, host    string
	allow, deny, prefixed         bool
	topic, group, transactionalID string
	cluster                       bool
	changed                       func(name string) bool
}

func (f *aclFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.principal, "principal", "", "the principal, User:NAME (User:* is every user)")
	fs.BoolVar(&f.allow, "allow", false, "an ALLOW ACL")
	fs.BoolVar(&f.deny, "deny", false, "a DENY ACL")
	fs.StringVar(&f.operation, "operation", "", "the operation: ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE")
	fs.StringVar(&f.topic, "topic", "", "a topic resource (* for every topic)")
	fs.StringVar(&f.group, "group", "", "a consumer group resource (* for every group)")
	fs.StringVar(&f.transactionalID, "transactional-id", "", "a transactional id resource (* for every one)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.BoolVar(&f.prefixed, "prefixed", false, "the resource name is a prefix of the names it covers (Kafka's PREFIXED pattern)")
	fs.StringVar(&f.host, "host", "", "the client host (IP address); * or none: any host")
	cmd.MarkFlagsMutuallyExclusive("allow", "deny")
	cmd.MarkFlagsMutuallyExclusive("topic", "group", "transactional-id", "cluster")
	f.changed = fs.Changed
}

// resource sets the builder's resource from the flags and reports whether one was named.
func (f *aclFlags) resource(b *kadm.ACLBuilder) bool {
	switch {
	case f.changed("topic"):
		b.Topics(f.topic)
	case f.changed("group"):
		b.Groups(f.group)
	case f.changed("transactional-id"):
		b.TransactionalIDs(f.transactionalID)
	case f.cluster:
		b.Clusters()
	default:
		return false
	}
	return true
}

// parseACLOperation reads an operation name as kafka-acls.sh writes it (Read,
// describe-configs, IDEMPOTENT_WRITE, ...).
func parseACLOperation(s string) (kmsg.ACLOperation, error) {
	op, err := kmsg.ParseACLOperation(strings.ReplaceAll(strings.ToLower(s), "-", "_"))
	if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny {
		return 0, usageErrorf("--operation %q: want one of ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE", s)
	}
	return op, nil
}

// builder turns the flags into kadm's ACL builder. forCreate requires the whole ACL;
// otherwise it is a filter whose left-out parts match anything.
func (f *aclFlags) builder(forCreate bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	if f.principal != "" && !strings.Contains(f.principal, ":") {
		return nil, usageErrorf("--principal %q: want User:NAME", f.principal)
	}
	var hosts []string
	if f.host != "" {
		hosts = []string{f.host}
	}
	var principals []string
	if f.principal != "" {
		principals = []string{f.principal}
	}
	switch {
	case f.allow:
		b.Allow(principals...).AllowHosts(hosts...)
	case f.deny:
		b.Deny(principals...).DenyHosts(hosts...)
	case forCreate:
		return nil, usageErrorf("say --allow or --deny")
	default:
		b.Allow(principals...).AllowHosts(hosts...).Deny(principals...).DenyHosts(hosts...)
	}
	switch {
	case f.operation != "":
		op, err := parseACLOperation(f.operation)
		if err != nil {
			return nil, err
		}
		b.Operations(op)
	case forCreate:
		return nil, usageErrorf("name the --operation")
	default:
		b.Operations(kadm.OpAny)
	}
	named := f.resource(b)
	switch {
	case forCreate && !named:
		return nil, usageErrorf("name a resource: --topic, --group, --transactional-id or --cluster")
	case forCreate && f.principal == "":
		return nil, usageErrorf("name the --principal (User:NAME)")
	case !named:
		b.AnyResource().ResourcePatternType(kadm.ACLPatternAny)
	case f.prefixed:
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
	}
	return b, nil
}

func newACLCreate(conn *connFlags) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create one ACL",
		Long:  "Create one ACL. It is enforced on every node when the command returns.\n" + aclHelp,
		Example: "  runnel acl create --principal User:alice --allow --operation READ --topic orders\n" +
			"  runnel acl create --principal User:alice --allow --operation READ --group billing\n" +
			"  runnel acl create --principal User:ingest --allow --operation WRITE --topic logs- --prefixed\n" +
			"  runnel acl create --principal User:* --deny --operation ALL --topic payroll --host 10.0.0.7\n" +
			"  runnel acl create --principal User:admin --allow --operation ALTER --cluster",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder(true)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				res, err := adm.CreateACLs(cmd.Context(), b)
				if err != nil {
					return fmt.Errorf("create ACL: %w", err)
				}
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("create ACL %s: %w", aclText(r.Principal, r.Host, r.Operation, r.Permission, r.Type, r.Pattern, r.Name), errWithMessage(r.Err, r.ErrMessage))
					}
					fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", aclText(r.Principal, r.Host, r.Operation, r.Permission, r.Type, r.Pattern, r.Name))
				}
				return nil
			})
		},
	}
	f.add(cmd)
	return cmd
}

// aclRow is one ACL in `acl list` and `acl delete`.
type aclRow struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	ResourceType string `json:"resource_type"`
	PatternType  string `json:"pattern_type"`
	ResourceName string `json:"resource_name"`
}

func newACLRow(principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, rt kmsg.ACLResourceType, pattern kadm.ACLPattern, name string) aclRow {
	return aclRow{Principal: principal, Host: host, Operation: op.String(), Permission: perm.String(),
		ResourceType: rt.String(), PatternType: kmsg.ACLResourcePatternType(pattern).String(), ResourceName: name}
}

func aclText(principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, rt kmsg.ACLResourceType, pattern kadm.ACLPattern, name string) string {
	return fmt.Sprintf("%s %s %s from host %s on %s %s %s", principal, perm, op, host, rt, kmsg.ACLResourcePatternType(pattern), name)
}

// errWithMessage adds the broker's message to a result's error.
func errWithMessage(err error, msg string) error {
	if msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

func newACLList(conn *connFlags) *cobra.Command {
	var f aclFlags
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List ACLs: every one, or those the flags select",
		Long: "List ACLs. Each flag given narrows the list; one left out matches anything. A\n" +
			"resource name selects the ACLs of exactly that (literal, or with --prefixed\n" +
			"prefixed) name.\n" + aclHelp,
		Example: "  runnel acl list\n  runnel acl list --topic orders\n  runnel acl list --principal User:alice --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			b, err := f.builder(false)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				res, err := adm.DescribeACLs(cmd.Context(), b)
				if err != nil {
					return fmt.Errorf("list ACLs: %w", err)
				}
				rows := []aclRow{}
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("list ACLs: %w", errWithMessage(r.Err, r.ErrMessage))
					}
					for _, d := range r.Described {
						rows = append(rows, newACLRow(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Pattern, d.Name))
					}
				}
				return printACLs(cmd.OutOrStdout(), rows, asJSON)
			})
		},
	}
	f.add(cmd)
	out.add(cmd)
	return cmd
}

func newACLDelete(conn *connFlags) *cobra.Command {
	var f aclFlags
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the ACLs of one resource that the flags select",
		Long: "Delete ACLs of the resource named (--topic, --group, --transactional-id or\n" +
			"--cluster; literal, or prefixed with --prefixed). Each other flag given narrows what\n" +
			"is deleted; one left out matches anything. Prints the ACLs deleted.\n" + aclHelp,
		Example: "  runnel acl delete --topic orders --principal User:alice --allow --operation READ\n" +
			"  runnel acl delete --topic logs- --prefixed",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			b, err := f.builder(false)
			if err != nil {
				return err
			}
			if !f.changed("topic") && !f.changed("group") && !f.changed("transactional-id") && !f.cluster {
				return usageErrorf("name the resource whose ACLs to delete: --topic, --group, --transactional-id or --cluster")
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				res, err := adm.DeleteACLs(cmd.Context(), b)
				if err != nil {
					return fmt.Errorf("delete ACLs: %w", err)
				}
				rows := []aclRow{}
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("delete ACLs: %w", errWithMessage(r.Err, r.ErrMessage))
					}
					for _, d := range r.Deleted {
						if d.Err != nil {
							return fmt.Errorf("delete ACL %s: %w", aclText(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Pattern, d.Name), errWithMessage(d.Err, d.ErrMessage))
						}
						rows = append(rows, newACLRow(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Pattern, d.Name))
					}
				}
				return printACLs(cmd.OutOrStdout(), rows, asJSON)
			})
		},
	}
	f.add(cmd)
	out.add(cmd)
	return cmd
}

func printACLs(w io.Writer, rows []aclRow, asJSON bool) error {
	slices.SortFunc(rows, func(a, b aclRow) int {
		return strings.Compare(a.ResourceType+"\x00"+a.PatternType+"\x00"+a.ResourceName+"\x00"+a.Principal+"\x00"+a.Operation+"\x00"+a.Permission+"\x00"+a.Host,
			b.ResourceType+"\x00"+b.PatternType+"\x00"+b.ResourceName+"\x00"+b.Principal+"\x00"+b.Operation+"\x00"+b.Permission+"\x00"+b.Host)
	})
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "RESOURCE\tPATTERN\tNAME\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ResourceType, r.PatternType, r.ResourceName, r.Principal, r.Host, r.Operation, r.Permission)
	}
	return tw.Flush()
}
