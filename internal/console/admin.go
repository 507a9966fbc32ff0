package console

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The console's security and configuration pages (docs/console.md): a node's
// configs, the ACLs, the SCRAM users and the client quotas, read and changed with the
// Kafka request a client would send (DescribeConfigs, DescribeAcls, CreateAcls,
// DeleteAcls, DescribeUserScramCredentials, AlterUserScramCredentials,
// DescribeClientQuotas, AlterClientQuotas) through the node's own listener, after
// the signed-in user's ACL for that request as Kafka checks it: DESCRIBE_CONFIGS on
// the cluster for configs and quotas, ALTER_CONFIGS to change quotas, DESCRIBE on the
// cluster for ACLs and users, ALTER to change them.

// NodeConfigs is GET /api/v1/nodes/{id}: one node's configs, as DescribeConfigs
// BROKER answers them.
type NodeConfigs struct {
	ID      int32        `json:"id"`
	Configs []NodeConfig `json:"configs"`
}

// NodeConfig is one config of a node. Source is where its value comes from:
// "default", "static" (the node's properties), "dynamic" (set for this node),
// "dynamic_default" (set for every node), or Kafka's source name lowercased.
type NodeConfig struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"` // null when sensitive
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// configSource is a DescribeConfigs source as the console names it.
func configSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "static"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "dynamic"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "dynamic_default"
	}
	return strings.ToLower(s.String())
}

// nodeConfigs serves GET /api/v1/nodes/{id}: DESCRIBE_CONFIGS on the cluster, as
// DescribeConfigs of a BROKER resource.
func (s *source) nodeConfigs(ctx context.Context, r *http.Request) (any, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: node id %q is not a number", ErrBadRequest, r.PathValue("id"))
	}
	v, err := s.requireOn(ctx, metadata.ACLOpDescribeConfigs, auth.Cluster)
	if err != nil {
		return nil, err
	}
	if _, ok := v.im.Brokers[metadata.NodeID(id)]; !ok {
		return nil, fmt.Errorf("%w: node %d is not registered (metadata offset %d on node %d)", httpd.ErrNotFound, id, v.im.Offset, s.n.ID())
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		rcs, err := adm.DescribeBrokerConfigs(ctx, int32(id))
		if err == nil && len(rcs) == 1 {
			err = rcs[0].Err
		}
		if err != nil {
			return nil, kafkaError(err, "describing the configs of node %d", id)
		}
		out := &NodeConfigs{ID: int32(id), Configs: []NodeConfig{}}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				out.Configs = append(out.Configs, NodeConfig{Name: c.Key, Value: c.Value, Source: configSource(c.Source), Sensitive: c.Sensitive})
			}
		}
		sort.Slice(out.Configs, func(i, j int) bool { return out.Configs[i].Name < out.Configs[j].Name })
		return out, nil
	})
}

// ACL is one ACL binding, its enums as Kafka names them, lowercased ("topic",
// "literal", "describe_configs", "allow").
type ACL struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// ACLs is GET /api/v1/acls.
type ACLs struct {
	ACLs []ACL `json:"acls"`
}

func lower(s fmt.Stringer) string { return strings.ToLower(s.String()) }

// aclBinding is an ACL as kmsg's enums, checked: every field named, no ANY or
// MATCH (a binding, not a filter).
type aclBinding struct {
	principal, host, name string
	rtype                 kmsg.ACLResourceType
	pattern               kmsg.ACLResourcePatternType
	op                    kmsg.ACLOperation
	perm                  kmsg.ACLPermissionType
}

func parseACL(a ACL) (aclBinding, error) {
	b := aclBinding{principal: strings.TrimSpace(a.Principal), host: strings.TrimSpace(a.Host), name: strings.TrimSpace(a.ResourceName)}
	if b.host == "" {
		b.host = "*"
	}
	if a.PatternType == "" {
		a.PatternType = "literal"
	}
	if a.Permission == "" {
		a.Permission = "allow"
	}
	var errs []string
	var err error
	if b.rtype, err = kmsg.ParseACLResourceType(a.ResourceType); err != nil || b.rtype <= kmsg.ACLResourceTypeAny {
		errs = append(errs, fmt.Sprintf("resource_type %q (topic, group, cluster, transactional_id, delegation_token, user)", a.ResourceType))
	}
	if b.pattern, err = kmsg.ParseACLResourcePatternType(a.PatternType); err != nil || b.pattern <= kmsg.ACLResourcePatternTypeMatch {
		errs = append(errs, fmt.Sprintf("pattern_type %q (literal, prefixed)", a.PatternType))
	}
	if b.op, err = kmsg.ParseACLOperation(a.Operation); err != nil || b.op <= kmsg.ACLOperationAny {
		errs = append(errs, fmt.Sprintf("operation %q (all, read, write, create, delete, alter, describe, ...)", a.Operation))
	}
	if b.perm, err = kmsg.ParseACLPermissionType(a.Permission); err != nil || b.perm <= kmsg.ACLPermissionTypeAny {
		errs = append(errs, fmt.Sprintf("permission %q (allow, deny)", a.Permission))
	}
	if !strings.Contains(b.principal, ":") {
		errs = append(errs, fmt.Sprintf("principal %q (User:NAME, or User:*)", a.Principal))
	}
	if b.name == "" {
		errs = append(errs, "resource_name (kafka-cluster for the cluster, * for every resource)")
	}
	if len(errs) > 0 {
		return b, fmt.Errorf("%w: an ACL needs a valid %s", ErrBadRequest, strings.Join(errs, ", "))
	}
	return b, nil
}

func (b aclBinding) String() string {
	return fmt.Sprintf("%s %s on %s %s (%s) from host %s", lower(b.perm), b.principal, lower(b.rtype), b.name, lower(b.pattern), b.host) + " to " + lower(b.op)
}

// listACLs serves GET /api/v1/acls: DESCRIBE on the cluster, as DescribeAcls.
func (s *source) listACLs(ctx context.Context, _ *http.Request) (any, error) {
	if err := s.requireCluster(ctx, metadata.ACLOpDescribe); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return s.withClient(func(cl *kgo.Client) (any, error) {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return nil, kafkaError(err, "describing the ACLs")
		}
		return aclsOf(resp), nil
	})
}

// aclsOf is DescribeAcls's answer as the console shows it, sorted by principal.
func aclsOf(resp *kmsg.DescribeACLsResponse) *ACLs {
	out := &ACLs{ACLs: []ACL{}}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out.ACLs = append(out.ACLs, ACL{Principal: a.Principal, Host: a.Host, ResourceType: lower(r.ResourceType), ResourceName: r.ResourceName,
				PatternType: lower(r.ResourcePatternType), Operation: lower(a.Operation), Permission: lower(a.PermissionType)})
		}
	}
	sort.Slice(out.ACLs, func(i, j int) bool {
		a, b := out.ACLs[i], out.ACLs[j]
		return fmt.Sprint(a.Principal, a.ResourceType, a.ResourceName, a.Operation, a.Host) < fmt.Sprint(b.Principal, b.ResourceType, b.ResourceName, b.Operation, b.Host)
	})
	return out
}

// ACLAction is the answer of POST and DELETE /api/v1/acls.
type ACLAction struct {
	ACL     ACL  `json:"acl"`
	Created bool `json:"created,omitempty"`
	// Deleted counts the ACLs the delete matched (0: none was there).
	Deleted int `json:"deleted"`
}

// alterACL serves a change of one ACL, given in the body: ALTER on the cluster, then
// change, which sends the request for binding b.
func (s *source) alterACL(ctx context.Context, r *http.Request, change func(*kgo.Client, aclBinding) (any, error)) (any, error) {
	var a ACL
	if err := decodeBody(r, &a); err != nil {
		return nil, err
	}
	b, err := parseACL(a)
	if err != nil {
		return nil, err
	}
	if err := s.requireCluster(ctx, metadata.ACLOpAlter); err != nil {
		return nil, err
	}
	return s.withClient(func(cl *kgo.Client) (any, error) { return change(cl, b) })
}

// createACL serves POST /api/v1/acls: ALTER on the cluster, as CreateAcls.
func (s *source) createACL(ctx context.Context, r *http.Request) (any, error) {
	return s.alterACL(ctx, r, func(cl *kgo.Client, b aclBinding) (any, error) {
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = b.rtype, b.name, b.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = b.principal, b.host, b.op, b.perm
		req.Creations = append(req.Creations, c)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Results) == 1 {
			err = resultError(resp.Results[0].ErrorCode, resp.Results[0].ErrorMessage)
		}
		if err != nil {
			return nil, kafkaError(err, "creating the ACL %s", b)
		}
		return &ACLAction{ACL: b.acl(), Created: true}, nil
	})
}

func (b aclBinding) acl() ACL {
	return ACL{Principal: b.principal, Host: b.host, ResourceType: lower(b.rtype), ResourceName: b.name, PatternType: lower(b.pattern),
		Operation: lower(b.op), Permission: lower(b.perm)}
}

// deleteACL serves DELETE /api/v1/acls (the ACL in the body, matched exactly):
// ALTER on the cluster, as DeleteAcls.
func (s *source) deleteACL(ctx context.Context, r *http.Request) (any, error) {
	return s.alterACL(ctx, r, func(cl *kgo.Client, b aclBinding) (any, error) {
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = b.rtype, &b.name, b.pattern
		f.Principal, f.Host, f.Operation, f.PermissionType = &b.principal, &b.host, b.op, b.perm
		req.Filters = append(req.Filters, f)
		resp, err := req.RequestWith(ctx, cl)
		out := &ACLAction{ACL: b.acl()}
		if err == nil && len(resp.Results) == 1 {
			res := resp.Results[0]
			err = kerr.ErrorForCode(res.ErrorCode)
			out.Deleted = len(res.MatchingACLs)
		}
		if err != nil {
			return nil, kafkaError(err, "deleting the ACL %s", b)
		}
		return out, nil
	})
}

// requireCluster is s.require of op on the cluster under the current image.
func (s *source) requireCluster(ctx context.Context, op metadata.ACLOperation) error {
	_, err := s.requireOn(ctx, op, auth.Cluster)
	return err
}

// Users is GET /api/v1/users: the SCRAM users, their mechanisms and iterations
// (never a salt or a key).
type Users struct {
	Users []User `json:"users"`
}

// User is one SCRAM user.
type User struct {
	User        string           `json:"user"`
	Credentials []UserCredential `json:"credentials"`
}

// UserCredential is one mechanism a user has a password for.
type UserCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// listUsers serves GET /api/v1/users: DESCRIBE on the cluster, as
// DescribeUserScramCredentials.
func (s *source) listUsers(ctx context.Context, _ *http.Request) (any, error) {
	if err := s.requireCluster(ctx, metadata.ACLOpDescribe); err != nil {
		return nil, err
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		ds, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			return nil, kafkaError(err, "describing the SCRAM users")
		}
		out := &Users{Users: []User{}}
		for _, d := range ds.Sorted() {
			u := User{User: d.User, Credentials: []UserCredential{}}
			for _, c := range d.CredInfos {
				u.Credentials = append(u.Credentials, UserCredential{Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
			}
			out.Users = append(out.Users, u)
		}
		return out, nil
	})
}

// UserRequest is the body of POST /api/v1/users (a new user, or a new password).
type UserRequest struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"` // SCRAM-SHA-256 or SCRAM-SHA-512 (the default)
	Password  string `json:"password"`
	// Iterations: 0 takes 8192 (Kafka's kafka-configs default is 4096; the minimum).
	Iterations int32 `json:"iterations"`
}

// UserAction is the answer of POST and DELETE /api/v1/users.
type UserAction struct {
	User       string   `json:"user"`
	Mechanisms []string `json:"mechanisms"`
	Upserted   bool     `json:"upserted,omitempty"`
	Deleted    bool     `json:"deleted,omitempty"`
}

func parseMechanism(m string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(m)) {
	case "", "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	}
	return 0, fmt.Errorf("%w: mechanism %q: SCRAM-SHA-256 or SCRAM-SHA-512", ErrBadRequest, m)
}

// upsertUser serves POST /api/v1/users: ALTER on the cluster, as
// AlterUserScramCredentials (the password is salted here, as kafka-configs does).
func (s *source) upsertUser(ctx context.Context, r *http.Request) (any, error) {
	var req UserRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	mech, err := parseMechanism(req.Mechanism)
	if err != nil {
		return nil, err
	}
	if req.User == "" || req.Password == "" {
		return nil, fmt.Errorf("%w: a user needs a name and a password", ErrBadRequest)
	}
	if req.Iterations == 0 {
		req.Iterations = 8192
	}
	if err := s.requireCluster(ctx, metadata.ACLOpAlter); err != nil {
		return nil, err
	}
	ups := []kadm.UpsertSCRAM{{User: req.User, Mechanism: mech, Iterations: req.Iterations, Password: req.Password}}
	return s.withAdmin(func(adm *kadm.Client) (any, error) { return alterUser(ctx, adm, req.User, nil, ups) })
}

// deleteUser serves DELETE /api/v1/users/{name}[?mechanism=M] (every mechanism of
// the user without one): ALTER on the cluster, as AlterUserScramCredentials.
func (s *source) deleteUser(ctx context.Context, r *http.Request) (any, error) {
	user := r.PathValue("name")
	if err := s.requireCluster(ctx, metadata.ACLOpAlter); err != nil {
		return nil, err
	}
	var dels []kadm.DeleteSCRAM
	if m := r.URL.Query().Get("mechanism"); m != "" {
		mech, err := parseMechanism(m)
		if err != nil {
			return nil, err
		}
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: mech})
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		if len(dels) == 0 {
			ds, err := adm.DescribeUserSCRAMs(ctx, user)
			if err == nil {
				err = ds[user].Err
			}
			if err != nil {
				return nil, kafkaError(err, "describing SCRAM user %s", user)
			}
			for _, c := range ds[user].CredInfos {
				dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: c.Mechanism})
			}
		}
		return alterUser(ctx, adm, user, dels, nil)
	})
}

// alterUser sends AlterUserScramCredentials for user and answers what it changed.
func alterUser(ctx context.Context, adm *kadm.Client, user string, dels []kadm.DeleteSCRAM, ups []kadm.UpsertSCRAM) (*UserAction, error) {
	res, err := adm.AlterUserSCRAMs(ctx, dels, ups)
	if err == nil {
		err = res[user].Err
	}
	if err != nil {
		return nil, kafkaError(err, "changing SCRAM user %s%s", user, detail(res[user].ErrMessage))
	}
	out := &UserAction{User: user, Mechanisms: []string{}, Upserted: len(ups) > 0, Deleted: len(dels) > 0}
	for _, d := range dels {
		out.Mechanisms = append(out.Mechanisms, d.Mechanism.String())
	}
	for _, u := range ups {
		out.Mechanisms = append(out.Mechanisms, u.Mechanism.String())
	}
	return out, nil
}

// Quotas is GET /api/v1/quotas: every client quota entity and its values.
type Quotas struct {
	Quotas []Quota `json:"quotas"`
}

// Quota is one entity's quotas. Entity maps an entity type ("user", "client-id",
// "ip") to its name, null for the type's default entity.
type Quota struct {
	Entity map[string]*string `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// listQuotas serves GET /api/v1/quotas: DESCRIBE_CONFIGS on the cluster, as
// DescribeClientQuotas.
func (s *source) listQuotas(ctx context.Context, _ *http.Request) (any, error) {
	if err := s.requireCluster(ctx, metadata.ACLOpDescribeConfigs); err != nil {
		return nil, err
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		qs, err := adm.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			return nil, kafkaError(err, "describing the client quotas")
		}
		return quotasOf(qs), nil
	})
}

// quotasOf is DescribeClientQuotas's answer as the console shows it, sorted by entity.
func quotasOf(qs []kadm.DescribedClientQuota) *Quotas {
	out := &Quotas{Quotas: []Quota{}}
	for _, q := range qs {
		e := Quota{Entity: map[string]*string{}, Values: map[string]float64{}}
		for _, c := range q.Entity {
			e.Entity[c.Type] = c.Name
		}
		for _, v := range q.Values {
			e.Values[v.Key] = v.Value
		}
		out.Quotas = append(out.Quotas, e)
	}
	sort.Slice(out.Quotas, func(i, j int) bool { return entityString(out.Quotas[i].Entity) < entityString(out.Quotas[j].Entity) })
	return out
}

// entityString is an entity as kafka-configs names it: "user=alice,client-id=<default>".
func entityString(e map[string]*string) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(e)) {
		name := "<default>"
		if e[t] != nil {
			name = *e[t]
		}
		parts = append(parts, t+"="+name)
	}
	return strings.Join(parts, ",")
}

// QuotaRequest is the body of POST /api/v1/quotas (set Key to Value) and DELETE
// /api/v1/quotas (remove Key).
type QuotaRequest struct {
	Entity map[string]*string `json:"entity"`
	Key    string             `json:"key"`
	Value  float64            `json:"value"`
}

// QuotaAction is the answer of POST and DELETE /api/v1/quotas.
type QuotaAction struct {
	Entity  map[string]*string `json:"entity"`
	Key     string             `json:"key"`
	Value   *float64           `json:"value"` // null after a removal
	Removed bool               `json:"removed,omitempty"`
}

// setQuota serves POST /api/v1/quotas and removeQuota DELETE /api/v1/quotas:
// ALTER_CONFIGS on the cluster, as AlterClientQuotas.
func (s *source) setQuota(ctx context.Context, r *http.Request) (any, error) {
	return s.alterQuota(ctx, r, false)
}

func (s *source) removeQuota(ctx context.Context, r *http.Request) (any, error) {
	return s.alterQuota(ctx, r, true)
}

func (s *source) alterQuota(ctx context.Context, r *http.Request, remove bool) (any, error) {
	var req QuotaRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Entity) == 0 || req.Key == "" {
		return nil, fmt.Errorf("%w: a quota needs an entity (user, client-id or ip) and a key (producer_byte_rate, ...)", ErrBadRequest)
	}
	if err := s.requireCluster(ctx, metadata.ACLOpAlterConfigs); err != nil {
		return nil, err
	}
	entry := kadm.AlterClientQuotaEntry{Ops: []kadm.AlterClientQuotaOp{{Key: req.Key, Value: req.Value, Remove: remove}}}
	for _, t := range slices.Sorted(maps.Keys(req.Entity)) {
		entry.Entity = append(entry.Entity, kadm.ClientQuotaEntityComponent{Type: t, Name: req.Entity[t]})
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{entry})
		var msg string
		if err == nil && len(res) == 1 {
			err, msg = res[0].Err, res[0].ErrMessage
		}
		if err != nil {
			return nil, kafkaError(err, "changing quota %s of %s%s", req.Key, entityString(req.Entity), detail(msg))
		}
		out := &QuotaAction{Entity: req.Entity, Key: req.Key, Removed: remove}
		if !remove {
			out.Value = &req.Value
		}
		return out, nil
	})
}
