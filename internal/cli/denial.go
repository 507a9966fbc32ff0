package cli

// Authorization denials, said in full.
//
// With ACLs on, a refused request answers an error code (TOPIC_, GROUP_,
// TRANSACTIONAL_ID_ or CLUSTER_AUTHORIZATION_FAILED). Where the response has an
// ErrorMessage the node fills it with the principal, host, operation and resource
// (internal/kafka/authorize.go), but many responses have none (Metadata's topic
// errors, InitProducerId, JoinGroup, OffsetCommit and OffsetFetch, ListOffsets), and
// franz-go drops FindCoordinator's. A bare code sends the user hunting: the idempotent
// producer's InitProducerId answers CLUSTER_AUTHORIZATION_FAILED when what is missing
// is WRITE on the topic (KIP-679).
//
// So report rewrites every denial the CLI prints into one sentence naming the
// principal, the host when known, the operation and the resource, and the
// `runnel acl create` that grants what the command needs:
//
//	User:alice (host 127.0.0.1) is not authorized to READ group g1 (GROUP_AUTHORIZATION_FAILED): grant it with runnel acl create --principal User:alice --allow --operation READ --group g1
//
// The node's own words win where they arrived (they say what the node decided); the
// rest comes from what the CLI knows: its principal (the SASL user, the client
// certificate's subject, else User:ANONYMOUS, as the node derives it), the local
// address of its connections (the host the node sees, without NAT), and, per
// command, what each resource type's denial means (commandNeeds).

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ACL resource types as runnel acl takes them (--topic, --group, --transactional-id,
// --cluster).
const (
	resTopic   = "topic"
	resGroup   = "group"
	resTxnID   = "transactional-id"
	resCluster = "cluster"
)

// authzResource is the resource type of each authorization error code.
var authzResource = map[int16]string{
	kerr.TopicAuthorizationFailed.Code:           resTopic,
	kerr.GroupAuthorizationFailed.Code:           resGroup,
	kerr.TransactionalIDAuthorizationFailed.Code: resTxnID,
	kerr.ClusterAuthorizationFailed.Code:         resCluster,
}

// aclNeed is what a command needs when a request of it is refused with code: op on
// a resource of type res, named by names (nil for the cluster).
type aclNeed struct {
	code  *kerr.Error
	op    string // Kafka's operation name, as runnel acl create --operation takes it
	res   string // resTopic, ...
	names func(cmd *cobra.Command) []string
	why   string // what the refused request was, when the code does not say (InitProducerId)
}

// fromArgs names the resource by the command's positional arguments.
func fromArgs(cmd *cobra.Command) []string { return cmd.Flags().Args() }

// fromFlag names the resource by a flag's value (a string or a string array).
func fromFlag(name string) func(*cobra.Command) []string {
	return func(cmd *cobra.Command) []string {
		f := cmd.Flags().Lookup(name)
		if f == nil || f.Value.String() == "" || f.Value.String() == "[]" {
			return nil
		}
		if vs, err := cmd.Flags().GetStringArray(name); err == nil {
			return vs
		}
		if vs, err := cmd.Flags().GetStringSlice(name); err == nil {
			return vs
		}
		return []string{f.Value.String()}
	}
}

// initProducerIDWhy explains a CLUSTER_AUTHORIZATION_FAILED of a producer: it is the
// idempotent producer's InitProducerId (KIP-679), which any topic's WRITE allows.
const initProducerIDWhy = "from InitProducerId: an idempotent producer needs WRITE on a topic or IDEMPOTENT_WRITE on the cluster"

func topicNeed(op string, names func(*cobra.Command) []string) aclNeed {
	return aclNeed{code: kerr.TopicAuthorizationFailed, op: op, res: resTopic, names: names}
}

func groupNeed(op string, names func(*cobra.Command) []string) aclNeed {
	return aclNeed{code: kerr.GroupAuthorizationFailed, op: op, res: resGroup, names: names}
}

func clusterNeed(op string) aclNeed {
	return aclNeed{code: kerr.ClusterAuthorizationFailed, op: op, res: resCluster}
}

func producerNeeds(topics func(*cobra.Command) []string) []aclNeed {
	return []aclNeed{topicNeed("WRITE", topics),
		{code: kerr.ClusterAuthorizationFailed, op: "WRITE", res: resTopic, names: topics, why: initProducerIDWhy}}
}

// commandNeeds is, per command (its path under runnel), what a denial of each
// resource type means it needs, as docs/security-acls.md lists per API. READ, WRITE,
// DELETE and ALTER imply DESCRIBE, so a command that reads names READ even where the
// request refused (Metadata, FindCoordinator) needed only DESCRIBE: granting that
// alone would fail at the next request.
var commandNeeds = map[string][]aclNeed{
	"produce":                     producerNeeds(fromArgs),
	"consume":                     {topicNeed("READ", fromArgs), groupNeed("READ", fromFlag("group"))},
	"bench produce":               producerNeeds(fromFlag("topic")),
	"bench consume":               {topicNeed("READ", fromFlag("topic")), groupNeed("READ", fromFlag("group"))},
	"bench e2e":                   append(producerNeeds(fromFlag("topic")), groupNeed("READ", fromFlag("group"))),
	"topic create":                {topicNeed("CREATE", fromArgs)},
	"topic describe":              {topicNeed("DESCRIBE", fromArgs)},
	"topic delete":                {topicNeed("DELETE", fromArgs)},
	"topic alter":                 {topicNeed("ALTER_CONFIGS", fromArgs)},
	"topic add-partitions":        {topicNeed("ALTER", fromArgs)},
	"topic delete-records":        {topicNeed("DELETE", fromArgs)},
	"topic repair":                {topicNeed("DELETE", fromArgs)},
	"group describe":              {groupNeed("DESCRIBE", fromArgs), topicNeed("DESCRIBE", nil)},
	"group delete":                {groupNeed("DELETE", fromArgs)},
	"group reset-offsets":         {groupNeed("READ", fromArgs), topicNeed("READ", fromFlag("topic"))},
	"cluster status":              {clusterNeed("DESCRIBE")},
	"cluster config":              {clusterNeed("DESCRIBE_CONFIGS")},
	"cluster elect-leaders":       {clusterNeed("ALTER")},
	"cluster decommission":        {clusterNeed("ALTER")},
	"cluster scrub":               {clusterNeed("ALTER")},
	"cluster quorum":              {clusterNeed("DESCRIBE")},
	"cluster quorum add-voter":    {clusterNeed("ALTER")},
	"cluster quorum remove-voter": {clusterNeed("ALTER")},
	"reassign execute":            {clusterNeed("ALTER")},
	"reassign cancel":             {clusterNeed("ALTER")},
	"reassign status":             {clusterNeed("DESCRIBE")},
	"quota describe":              {clusterNeed("DESCRIBE_CONFIGS")},
	"quota alter":                 {clusterNeed("ALTER_CONFIGS")},
	"user create":                 {clusterNeed("ALTER")},
	"user delete":                 {clusterNeed("ALTER")},
	"user list":                   {clusterNeed("DESCRIBE")},
	"acl create":                  {clusterNeed("ALTER")},
	"acl delete":                  {clusterNeed("ALTER")},
	"acl list":                    {clusterNeed("DESCRIBE")},
	"link create":                 {clusterNeed("ALTER")},
	"link delete":                 {clusterNeed("ALTER")},
	"link pause":                  {clusterNeed("ALTER")},
	"link resume":                 {clusterNeed("ALTER")},
	"link promote":                {clusterNeed("ALTER")},
	"link list":                   {clusterNeed("DESCRIBE")},
	"link status":                 {clusterNeed("DESCRIBE")},
}

// nodeDenial matches the node's message (internal/kafka/authorize.go denied):
// "User:alice (host 127.0.0.1) is not authorized to DESCRIBE Group:g1".
var nodeDenial = regexp.MustCompile(`(User:\S+) \(host ([^)]*)\) is not authorized to ([A-Z_]+) (Topic|Group|TransactionalId|Cluster):(\S+)`)

// nodeResource maps the node's resource labels to runnel acl's flags.
var nodeResource = map[string]string{"Topic": resTopic, "Group": resGroup, "TransactionalId": resTxnID, "Cluster": resCluster}

// denial is one refused request, as report prints it.
type denial struct {
	code      *kerr.Error
	principal string
	host      string // "" when unknown
	op, res   string
	name      string // "" for the cluster
	why       string
	grant     aclNeed // what to grant; grant.op == "" when unknown
	grantName string
}

func (d *denial) Error() string {
	var b strings.Builder
	b.WriteString(d.principal)
	if d.host != "" {
		fmt.Fprintf(&b, " (host %s)", d.host)
	}
	if d.op == "" {
		b.WriteString(" is not authorized")
	} else {
		fmt.Fprintf(&b, " is not authorized to %s %s", d.op, resourceWords(d.res, d.name))
	}
	fmt.Fprintf(&b, " (%s", d.code.Message)
	if d.why != "" {
		b.WriteString(" " + d.why)
	}
	b.WriteString(")")
	if d.grant.op == "" {
		return b.String()
	}
	if d.grant.op != d.op || d.grant.res != d.res || d.grantName != d.name {
		fmt.Fprintf(&b, "; this command needs %s on %s", d.grant.op, resourceWords(d.grant.res, d.grantName))
	}
	fmt.Fprintf(&b, ": grant it with runnel acl create --principal %s --allow --operation %s %s",
		shellWord(d.principal), d.grant.op, aclResourceFlag(d.grant.res, d.grantName))
	return b.String()
}

func (d *denial) Unwrap() error { return d.code }

// resourceWords is "topic orders", "group g1", "the cluster".
func resourceWords(res, name string) string {
	if res == resCluster {
		return "the cluster"
	}
	return res + " " + name
}

// aclResourceFlag is runnel acl create's resource flag for res and name.
func aclResourceFlag(res, name string) string {
	if res == resCluster {
		return "--cluster"
	}
	return "--" + res + " " + shellWord(name)
}

// shellWord quotes s for a shell when it holds anything but plain characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:=,@/") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// explainDenial returns err rewritten as a denial when it is an authorization error
// of a client command; any other error unchanged.
func explainDenial(cmd *cobra.Command, err error) error {
	var ke *kerr.Error
	if err == nil || cmd == nil || !errors.As(err, &ke) {
		return err
	}
	res, ok := authzResource[ke.Code]
	if !ok || errors.As(err, new(*denial)) {
		return err
	}
	conn := connOf(cmd)
	if conn == nil {
		return err
	}
	d := &denial{code: ke, res: res, principal: conn.principal(), host: conn.localHost()}
	if res == resCluster {
		d.name = ""
	}
	need, found := findNeed(cmd, ke)
	if found {
		d.grant, d.grantName = need, needName(cmd, need, err)
		d.why = need.why
		if need.why != "" || d.res == need.res {
			// The need says what the refused request was about (InitProducerId is
			// about a topic's WRITE) or is of the refused resource type.
			d.op, d.res, d.name = need.op, need.res, d.grantName
		}
	}
	if m := nodeDenial.FindStringSubmatch(err.Error()); m != nil {
		// The node's own account of what it refused.
		d.principal, d.host, d.op, d.res, d.name, d.why = m[1], m[2], m[3], nodeResource[m[4]], m[5], ""
		if d.res == resCluster {
			d.name = ""
		}
	}
	if d.res != resCluster && d.name == "" {
		d.op = "" // the resource is unknown: do not make one up
	}
	if found && d.grant.res != resCluster && d.grantName == "" {
		d.grant = aclNeed{}
	}
	return d
}

// findNeed is the command's need for a denial with code ke.
func findNeed(cmd *cobra.Command, ke *kerr.Error) (aclNeed, bool) {
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	for _, n := range commandNeeds[path] {
		if n.code == ke {
			return n, true
		}
	}
	return aclNeed{}, false
}

// needName is the resource the need names: the one of its candidates the error
// quotes (a command of several topics), else the only candidate, else all of them.
func needName(cmd *cobra.Command, need aclNeed, err error) string {
	if need.res == resCluster || need.names == nil {
		return ""
	}
	names := need.names(cmd)
	msg := err.Error()
	for _, n := range names {
		if strings.Contains(msg, strconv.Quote(n)) || strings.Contains(msg, ":"+n) {
			return n
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names, ",")
}

// connOf is the connFlags of a command that has -b, through the flag's value.
func connOf(cmd *cobra.Command) *connFlags {
	f := cmd.Flags().Lookup("bootstrap")
	if f == nil {
		return nil
	}
	if v, ok := f.Value.(*bootstrapValue); ok {
		return v.c
	}
	return nil
}

// bootstrapValue is -b's flag value: the bootstrap string, and the way from a
// command back to its connFlags (connOf).
type bootstrapValue struct{ c *connFlags }

func (v *bootstrapValue) String() string     { return v.c.bootstrap }
func (v *bootstrapValue) Set(s string) error { v.c.bootstrap = s; return nil }
func (v *bootstrapValue) Type() string       { return "string" }

// principal is the principal the node gives this client, as it derives it: the SASL
// user, else the TLS client certificate's subject, else User:ANONYMOUS.
func (c *connFlags) principal() string {
	if c.security == nil {
		return "User:ANONYMOUS"
	}
	sec, err := c.security.parse()
	switch {
	case err != nil:
		return "User:ANONYMOUS"
	case sec.usesSASL():
		return "User:" + sec.username
	case sec.usesTLS() && sec.certFile != "":
		if subject := certSubject(sec.certFile); subject != "" {
			return "User:" + subject
		}
	}
	return "User:ANONYMOUS"
}

// certSubject is the subject of the first certificate in a PEM file ("" if none).
func certSubject(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return ""
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return ""
			}
			return cert.Subject.String()
		}
	}
}

// localAddr records the local IP of the command's first connection: the host the
// node sees and ACL hosts name (unless a NAT is between them).
type localAddr struct {
	mu   sync.Mutex
	host string
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (l *localAddr) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if err != nil || conn == nil {
		return
	}
	host, _, herr := net.SplitHostPort(conn.LocalAddr().String())
	if herr != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host == "" {
		l.host = host
	}
}

func (c *connFlags) localHost() string {
	c.local.mu.Lock()
	defer c.local.mu.Unlock()
	return c.local.host
}
