package console

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/runnel-io/runnel/internal/httpd"
)

// The data pages of the console package (a node's configs and charts, ACLs, users,
// quotas): rendered here from the answer of their JSON twin, so that a page and its
// JSON show the same thing; their create and delete forms are sent as JSON by
// actions.js (form[data-api]) with the session's CSRF token.

// dataKind is one data page: its answer comes from get, as its JSON twin's.
type dataKind struct {
	nav   string
	title func(r *http.Request) string
	body  string
	get   func(ctx context.Context, r *http.Request) (any, error)
}

var pageFuncs = template.FuncMap{
	"pathEscape": url.PathEscape,
	"str": func(s *string) string {
		if s == nil {
			return "<default>"
		}
		return *s
	},
	"entity": entityString,
	"num":    func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
}

func (h *handler) dataPage(k dataKind) http.HandlerFunc {
	tpl := template.Must(template.Must(template.New("page").Funcs(pageFuncs).Parse(mainTpl)).Parse(k.body))
	return func(w http.ResponseWriter, r *http.Request) {
		d := pageData{Title: k.title(r), Nav: k.nav}
		if s := httpd.SessionFrom(r.Context()); s != nil {
			d.User = s.User
		}
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		code := http.StatusOK
		var err error
		if d.D, err = k.get(ctx, r); err != nil {
			code, d.Err = statusOf(err), err.Error()
			if code >= 500 {
				h.src.logger.Warn("console: page failed", "path", r.URL.Path, "err", err)
			}
		}
		// The node page has no form: its charts are worth an auto-refresh.
		h.render(w, r, tpl, d, httpd.Frame{Title: d.Title, Nav: k.nav, Code: code, APIPath: "/api/v1" + r.URL.EscapedPath(),
			NoRefresh: k.body != nodeBody})
	}
}

func (h *handler) adminPages() {
	s := h.src
	h.handle("GET /nodes/{id}", h.dataPage(dataKind{"nodes", func(r *http.Request) string { return "Node " + r.PathValue("id") }, nodeBody, s.nodeConfigs}))
	h.handle("GET /acls", h.dataPage(dataKind{"acls", fixedTitle("ACLs"), aclsBody, s.listACLs}))
	h.handle("GET /users", h.dataPage(dataKind{"users", fixedTitle("SCRAM users"), usersBody, s.listUsers}))
	h.handle("GET /quotas", h.dataPage(dataKind{"quotas", fixedTitle("Client quotas"), quotasBody, s.listQuotas}))
	h.handle("GET /api/v1/nodes/{id}", h.api(false, s.nodeConfigs))
	h.handle("GET /api/v1/acls", h.api(false, s.listACLs))
	h.handle("POST /api/v1/acls", h.api(true, s.createACL))
	h.handle("DELETE /api/v1/acls", h.api(true, s.deleteACL))
	h.handle("GET /api/v1/users", h.api(false, s.listUsers))
	h.handle("POST /api/v1/users", h.api(true, s.upsertUser))
	h.handle("DELETE /api/v1/users/{name}", h.api(true, s.deleteUser))
	h.handle("GET /api/v1/quotas", h.api(false, s.listQuotas))
	h.handle("POST /api/v1/quotas", h.api(true, s.setQuota))
	h.handle("DELETE /api/v1/quotas", h.api(true, s.removeQuota))
}

func fixedTitle(t string) func(*http.Request) string { return func(*http.Request) string { return t } }

const nodeBody = `{{define "body"}}{{with .D}}
<p><a href="/nodes">Every node</a> · <a href="/api/v1/nodes/{{.ID}}">JSON</a></p>
<h2>Throughput, last hour (partitions it leads)</h2>
<div class="charts" id="node-charts" data-chart-kind="node" data-chart-name="{{.ID}}"></div>
<h2>Configs</h2>
<p class="note">As DescribeConfigs answers for this node. Source: default (Runnel's default), static (the node's
properties or --set), dynamic (set for this node with runnel config), dynamic_default (set for every node).</p>
<table class="data" id="node-configs"><thead><tr><th>Name</th><th>Value</th><th>Source</th></tr></thead><tbody>
{{range .Configs}}<tr class="src-{{.Source}}"><td class="mono">{{.Name}}</td><td class="mono">{{if .Sensitive}}<span class="why">(sensitive)</span>{{else if .Value}}{{str .Value}}{{else}}<span class="why">null</span>{{end}}</td><td>{{.Source}}</td></tr>
{{end}}</tbody></table>
{{end}}{{end}}`

const aclsBody = `{{define "body"}}{{with .D}}
<p class="note">As DescribeAcls answers (<a href="/api/v1/acls">JSON</a>). Creating or deleting an ACL needs ALTER on the cluster.</p>
<table class="data" id="acls"><thead><tr><th>Principal</th><th>Host</th><th>Resource</th><th>Pattern</th><th>Operation</th><th>Permission</th><th></th></tr></thead><tbody>
{{range .ACLs}}<tr><td>{{.Principal}}</td><td>{{.Host}}</td><td>{{.ResourceType}} <span class="mono">{{.ResourceName}}</span></td><td>{{.PatternType}}</td><td>{{.Operation}}</td><td>{{.Permission}}</td>
<td><form class="inline" data-api="DELETE /api/v1/acls">{{template "aclFields" .}}<button type="submit">Delete</button></form></td></tr>
{{else}}<tr><td colspan="7" class="empty">No ACL.</td></tr>
{{end}}</tbody></table>
{{end}}
<h2>Create an ACL</h2>
<form id="create-acl" class="actions" data-api="POST /api/v1/acls">
<label>Principal <input name="principal" id="acl-principal" required placeholder="User:alice"></label>
<label>Host <input name="host" id="acl-host" value="*"></label>
<label>Resource type <select name="resource_type" id="acl-resource-type"><option>topic</option><option>group</option><option>cluster</option><option>transactional_id</option></select></label>
<label>Resource name <input name="resource_name" id="acl-resource-name" required placeholder="orders, or kafka-cluster"></label>
<label>Pattern <select name="pattern_type" id="acl-pattern"><option>literal</option><option>prefixed</option></select></label>
<label>Operation <select name="operation" id="acl-operation"><option>read</option><option>write</option><option>describe</option><option>create</option><option>delete</option><option>alter</option><option>describe_configs</option><option>alter_configs</option><option>idempotent_write</option><option>all</option></select></label>
<label>Permission <select name="permission" id="acl-permission"><option>allow</option><option>deny</option></select></label>
<button type="submit">Create ACL</button>
</form>
{{end}}
{{define "aclFields"}}<input type="hidden" name="principal" value="{{.Principal}}"><input type="hidden" name="host" value="{{.Host}}"><input type="hidden" name="resource_type" value="{{.ResourceType}}"><input type="hidden" name="resource_name" value="{{.ResourceName}}"><input type="hidden" name="pattern_type" value="{{.PatternType}}"><input type="hidden" name="operation" value="{{.Operation}}"><input type="hidden" name="permission" value="{{.Permission}}">{{end}}`

const usersBody = `{{define "body"}}{{with .D}}
<p class="note">The SCRAM users of the cluster and their mechanisms, as DescribeUserScramCredentials answers
(<a href="/api/v1/users">JSON</a>): never a salt or a key. Adding or deleting a user needs ALTER on the cluster.</p>
<table class="data" id="users"><thead><tr><th>User</th><th>Mechanism</th><th class="num">Iterations</th><th></th></tr></thead><tbody>
{{range $u := .Users}}{{range .Credentials}}<tr><td>{{$u.User}}</td><td>{{.Mechanism}}</td><td class="num">{{.Iterations}}</td>
<td><form class="inline" data-api="DELETE /api/v1/users/{{pathEscape $u.User}}?mechanism={{.Mechanism}}" data-nobody><button type="submit">Delete</button></form></td></tr>
{{end}}{{else}}<tr><td colspan="4" class="empty">No SCRAM user.</td></tr>
{{end}}</tbody></table>
{{end}}
<h2>Add a user, or change a password</h2>
<form id="create-user" class="actions" data-api="POST /api/v1/users">
<label>User <input name="user" id="user-name" required></label>
<label>Mechanism <select name="mechanism" id="user-mechanism"><option>SCRAM-SHA-512</option><option>SCRAM-SHA-256</option></select></label>
<label>Password <input name="password" id="user-password" type="password" required autocomplete="new-password"></label>
<label>Iterations <input name="iterations" id="user-iterations" type="number" min="4096" max="16384" placeholder="8192"></label>
<button type="submit">Save user</button>
</form>
{{end}}`

const quotasBody = `{{define "body"}}{{with .D}}
<p class="note">Client quotas, as DescribeClientQuotas answers (<a href="/api/v1/quotas">JSON</a>); an entity
&lt;default&gt; applies to every user or client id without its own. Setting or removing one needs ALTER_CONFIGS on the
cluster, reading them DESCRIBE_CONFIGS.</p>
<table class="data" id="quotas"><thead><tr><th>Entity</th><th>Quota</th><th class="num">Value</th><th></th></tr></thead><tbody>
{{range $q := .Quotas}}{{range $k, $v := .Values}}<tr><td class="mono">{{entity $q.Entity}}</td><td class="mono">{{$k}}</td><td class="num">{{num $v}}</td>
<td><form class="inline" data-api="DELETE /api/v1/quotas">{{range $t, $n := $q.Entity}}<input type="hidden" name="entity.{{$t}}" value="{{str $n}}">{{end}}<input type="hidden" name="key" value="{{$k}}"><button type="submit">Remove</button></form></td></tr>
{{end}}{{else}}<tr><td colspan="4" class="empty">No quota.</td></tr>
{{end}}</tbody></table>
{{end}}
<h2>Set a quota</h2>
<form id="set-quota" class="actions" data-api="POST /api/v1/quotas">
<label>User <input name="entity.user" id="quota-user" placeholder="alice, or <default>"></label>
<label>Client id <input name="entity.client-id" id="quota-client" placeholder="app, or <default>"></label>
<label>IP <input name="entity.ip" id="quota-ip"></label>
<label>Quota <select name="key" id="quota-key"><option>producer_byte_rate</option><option>consumer_byte_rate</option><option>request_percentage</option><option>controller_mutation_rate</option><option>connection_creation_rate</option></select></label>
<label>Value <input name="value" id="quota-value" type="number" step="any" min="0" required></label>
<button type="submit">Set quota</button>
</form>
{{end}}`
