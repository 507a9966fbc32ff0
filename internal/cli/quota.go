package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(newQuotaCommand) }

const quotaEntityHelp = `
An entity is a user (--user NAME, or --user-defaults for <default>, the quota of every
user without one of its own), a client id (--client-id NAME, or --client-defaults),
or a user with a client id. The flags are kafka-configs.sh's. Without authentication
every client is user ANONYMOUS. The quota that applies to a connection is the first
set, per key, in Kafka's order: user + client id, user + default client id, user,
default user + client id, default user + default client id, default user, client id,
default client id.

Keys: producer_byte_rate and consumer_byte_rate (bytes per second, whole numbers),
request_percentage (percent of one core's request handling time).`

func newQuotaCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Describe and alter client quotas (producer_byte_rate, consumer_byte_rate, request_percentage)",
		Long:  "Describe and alter client quotas (Kafka's DescribeClientQuotas and AlterClientQuotas).\n" + quotaEntityHelp,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlagsAs(cmd.PersistentFlags(), defaultClientID, false)
	cmd.AddCommand(newQuotaDescribe(conn), newQuotaAlter(conn))
	return cmd
}

// quotaEntityFlags name an entity (alter) or filter entities (describe).
type quotaEntityFlags struct {
	user, clientID               string
	userDefaults, clientDefaults bool
	userChanged, clientIDChanged func() bool
}

func (f *quotaEntityFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.user, "user", "", "the user NAME (ANONYMOUS for unauthenticated clients)")
	fs.StringVar(&f.clientID, "client-id", "", "the client id NAME (may be empty)")
	fs.BoolVar(&f.userDefaults, "user-defaults", false, "the default user, <default>")
	fs.BoolVar(&f.clientDefaults, "client-defaults", false, "the default client id, <default>")
	cmd.MarkFlagsMutuallyExclusive("user", "user-defaults")
	cmd.MarkFlagsMutuallyExclusive("client-id", "client-defaults")
	f.userChanged = func() bool { return fs.Changed("user") }
	f.clientIDChanged = func() bool { return fs.Changed("client-id") }
}

// components returns the entity as (type, name) pairs, a nil name being the default.
func (f *quotaEntityFlags) components() kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	switch {
	case f.userChanged():
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "user", Name: kmsg.StringPtr(f.user)})
	case f.userDefaults:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "user"})
	}
	switch {
	case f.clientIDChanged():
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr(f.clientID)})
	case f.clientDefaults:
		e = append(e, kadm.ClientQuotaEntityComponent{Type: "client-id"})
	}
	return e
}

// quotaRow is one entity and its quotas in `quota describe`. Entity is the protocol's
// list of components; a null name is the default.
type quotaRow struct {
	Entity []quotaComponent   `json:"entity"`
	Values map[string]float64 `json:"values"`
}

type quotaComponent struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

func newQuotaDescribe(conn *connFlags) *cobra.Command {
	var ent quotaEntityFlags
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "List client quotas: every one, or those of exactly the entity named",
		Long: "List client quotas. Without entity flags, every entity's. With them, the entity\n" +
			"that has exactly those components (--user alice: user alice's own quotas, not those\n" +
			"of alice with a client id; add --client-id to see a combination).\n" + quotaEntityHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			var filter []kadm.DescribeClientQuotaComponent
			for _, c := range ent.components() {
				dc := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: kmsg.QuotasMatchTypeExact}
				if c.Name == nil {
					dc.MatchType = kmsg.QuotasMatchTypeDefault
				}
				filter = append(filter, dc)
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				got, err := adm.DescribeClientQuotas(cmd.Context(), len(filter) > 0, filter)
				if err != nil {
					return fmt.Errorf("describe client quotas: %w", err)
				}
				return printQuotas(cmd.OutOrStdout(), quotaRows(got), asJSON)
			})
		},
	}
	ent.add(cmd)
	out.add(cmd)
	return cmd
}

func quotaRows(got kadm.DescribedClientQuotas) []quotaRow {
	rows := []quotaRow{}
	for _, q := range got {
		r := quotaRow{Values: map[string]float64{}}
		for _, c := range q.Entity {
			r.Entity = append(r.Entity, quotaComponent{c.Type, c.Name})
		}
		for _, v := range q.Values {
			r.Values[v.Key] = v.Value
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b quotaRow) int { return strings.Compare(entityString(a.Entity), entityString(b.Entity)) })
	return rows
}

func entityString(cs []quotaComponent) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		name := "<default>"
		if c.Name != nil {
			name = strconv.Quote(*c.Name)
			if *c.Name != "" && !strings.ContainsAny(*c.Name, " ,=\"") {
				name = *c.Name
			}
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ", ")
}

func printQuotas(w io.Writer, rows []quotaRow, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "ENTITY\tQUOTAS")
	for _, r := range rows {
		keys := make([]string, 0, len(r.Values))
		for k := range r.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = k + "=" + strconv.FormatFloat(r.Values[k], 'f', -1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\n", entityString(r.Entity), strings.Join(vals, ","))
	}
	return tw.Flush()
}

func newQuotaAlter(conn *connFlags) *cobra.Command {
	var ent quotaEntityFlags
	var sets, deletes []string
	var validateOnly bool
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Set or delete client quotas of one entity",
		Long: "Set (--set KEY=VALUE) or delete (--delete KEY) quotas of one entity. The change is\n" +
			"enforced on every node when the command returns.\n" + quotaEntityHelp,
		Example: "  runnel quota alter --client-id ingest --set producer_byte_rate=1048576\n" +
			"  runnel quota alter --user-defaults --set consumer_byte_rate=10485760 --set request_percentage=50\n" +
			"  runnel quota alter --user ANONYMOUS --client-id ingest --delete producer_byte_rate",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entity := ent.components()
			if len(entity) == 0 {
				return usageErrorf("name an entity: --user, --user-defaults, --client-id or --client-defaults")
			}
			ops, err := quotaOps(sets, deletes)
			if err != nil {
				return err
			}
			name := entityString(quotaRows(kadm.DescribedClientQuotas{{Entity: entity}})[0].Entity)
			return withAdmin(conn, func(adm *kadm.Client) error {
				alter := adm.AlterClientQuotas
				if validateOnly {
					alter = adm.ValidateAlterClientQuotas
				}
				res, err := alter(cmd.Context(), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
				if err == nil && len(res) > 0 {
					err = withMessage(res[0].Err, res[0].ErrMessage)
				}
				if err != nil {
					return fmt.Errorf("alter client quotas of %s: %w", name, err)
				}
				verb := "Altered"
				if validateOnly {
					verb = "Validated (not applied)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s client quotas of %s.\n", verb, name)
				return nil
			})
		},
	}
	ent.add(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE to set (repeatable)")
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "KEY to delete (repeatable)")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "have the controller check the change without applying it")
	return cmd
}

func quotaOps(sets, deletes []string) ([]kadm.AlterClientQuotaOp, error) {
	var ops []kadm.AlterClientQuotaOp
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErrorf("bad --set %q: want KEY=VALUE", s)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, usageErrorf("bad --set %q: %s is not a number", s, k)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
	}
	for _, k := range deletes {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(ops) == 0 {
		return nil, usageErrorf("nothing to change: give --set KEY=VALUE or --delete KEY")
	}
	return ops, nil
}
