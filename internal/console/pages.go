package console

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"net/url"

	"github.com/runnel-io/runnel/internal/httpd"
)

// The console's action pages: the record browser with the produce and delete forms of
// a topic, the create-topic form, and a group's reset and delete forms. Each page is
// a shell served from the binary; its script (actions.js, no CDN) calls the JSON
// endpoints with the session's CSRF token, so a page and a script see the same
// answers and the same ACL refusals.

//go:embed assets/actions.js
var actionsJS []byte

func serveActionsJS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(actionsJS)
}

// pageData is what an action page's template reads.
type pageData struct {
	Title, Nav, User string
	Topic, Group     string // the path's topic or group, "" for none
	TopicHref        string // the topic's or group's read-only page
	GroupHref        string
	// D is a data page's answer (its JSON twin's), Err why there is none.
	D   any
	Err string
}

type pageKind struct {
	nav   string
	title func(r *http.Request) string
	body  string // the template of the page's main
}

var (
	pageRecords     = pageKind{"topics", func(r *http.Request) string { return "Records of topic " + r.PathValue("name") }, recordsBody}
	pageNewTopic    = pageKind{"topics", func(*http.Request) string { return "Create a topic" }, newTopicBody}
	pageGroupManage = pageKind{"groups", func(r *http.Request) string { return "Manage group " + r.PathValue("id") }, groupBody}
)

func (h *handler) page(k pageKind) http.HandlerFunc {
	tpl := template.Must(template.Must(template.New("page").Parse(mainTpl)).Parse(k.body))
	return func(w http.ResponseWriter, r *http.Request) {
		d := pageData{Title: k.title(r), Nav: k.nav, Topic: r.PathValue("name"), Group: r.PathValue("id")}
		if d.Topic != "" {
			d.TopicHref = "/topics/" + url.PathEscape(d.Topic)
		}
		if d.Group != "" {
			d.GroupHref = "/groups/" + url.PathEscape(d.Group)
		}
		if s := httpd.SessionFrom(r.Context()); s != nil {
			d.User = s.User
		}
		h.render(w, r, tpl, d, httpd.Frame{Title: d.Title, Nav: k.nav, Topic: d.Topic, Group: d.Group, NoRefresh: true})
	}
}

// render draws d with tpl inside httpd's layout as f describes it (the scripts of
// these pages added, the node line of the node's current image).
func (h *handler) render(w http.ResponseWriter, r *http.Request, tpl *template.Template, d pageData, f httpd.Frame) {
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, d); err != nil {
		h.src.logger.Warn("console: rendering a page", "path", r.URL.Path, "err", err)
		http.Error(w, "console: rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if v, err := h.src.snapshot(); err == nil {
		hdr := v.hdr
		f.Header = &hdr
	}
	f.Scripts = append(f.Scripts, "/assets/actions.js")
	httpd.RenderFrame(w, r, f, template.HTML(buf.String())) // html/template escaped it
}

// mainTpl is what these pages put in httpd's layout (Frame): the error line their
// script fills, then the page's body or why there is none.
const mainTpl = `<p class="error" role="alert" id="error" hidden></p>
{{with .Err}}<p class="error" role="alert" id="page-error">{{.}}</p>{{else}}{{template "body" .}}{{end}}`

const recordsBody = `{{define "body"}}
<p><a href="{{.TopicHref}}">Partitions and groups of {{.Topic}}</a></p>
<form id="browse" class="actions">
<label>Partition <select name="partition" id="partition"></select></label>
<label>From <select name="from" id="from"><option value="newest">newest</option><option value="offset">offset</option><option value="time">time</option></select></label>
<label>Offset or time <input name="at" id="at" placeholder="offset, or 2026-01-02T15:04:05Z"></label>
<label>Limit <input name="limit" id="limit" type="number" min="1" max="500" value="50"></label>
<label>Filter <input name="filter" id="filter" placeholder="text in key, value or headers"></label>
<label>Show values as <select name="format" id="format"><option value="text">text</option><option value="json">JSON</option><option value="hex">hex</option><option value="base64">base64</option></select></label>
<button type="submit">Show</button>
</form>
<p class="meta" id="page-info"></p>
<table class="data" id="records">
<thead><tr><th class="num">Offset</th><th>Timestamp</th><th>Key</th><th>Value</th><th>Headers</th><th class="num">Size</th></tr></thead>
<tbody></tbody></table>
<p><button type="button" id="prev">Older</button> <button type="button" id="next">Newer</button></p>
<h2>Produce a record</h2>
<form id="produce" class="actions">
<label>Partition <input name="partition" id="produce-partition" type="number" min="0" placeholder="by key"></label>
<label>Key <input name="key" id="produce-key"></label>
<label>Value <textarea name="value" id="produce-value" rows="4" cols="60"></textarea></label>
<label>Headers (one KEY=VALUE a line) <textarea name="headers" id="produce-headers" rows="2" cols="40"></textarea></label>
<button type="submit">Produce</button>
</form>
<p id="produce-result" role="status"></p>
<h2>Add partitions</h2>
<form id="add-partitions" class="actions" data-api="POST /api/v1{{.TopicHref}}/partitions">
<label>Partition count after the change (above the current one; needs ALTER on the topic) <input name="count" id="partitions-count" type="number" min="2" required></label>
<button type="submit">Add partitions</button>
</form>
<h2>Edit configs</h2>
<form id="edit-configs" class="actions" data-api="POST /api/v1{{.TopicHref}}/configs">
<label>Set (one KEY=VALUE a line) <textarea name="set" id="configs-set" data-kv rows="3" cols="40" placeholder="retention.ms=86400000"></textarea></label>
<label>Delete, back to the default (names, comma-separated) <input name="delete" id="configs-delete" data-list placeholder="cleanup.policy, retention.bytes"></label>
<button type="submit">Change configs</button>
</form>
<p class="note">Changing configs needs ALTER_CONFIGS on the topic; the topic's current configs are on <a href="{{.TopicHref}}">its page</a>.</p>
<h2>Delete the topic</h2>
<form id="delete-topic" class="actions">
<label>Type the topic's name to confirm <input name="confirm" id="delete-confirm"></label>
<button type="submit">Delete topic</button>
</form>
<p id="delete-result" role="status"></p>
{{end}}`

const newTopicBody = `{{define "body"}}
<form id="create-topic" class="actions">
<label>Name <input name="name" id="create-name" required></label>
<label>Partitions <input name="partitions" id="create-partitions" type="number" min="1" placeholder="num.partitions"></label>
<label>Replication factor <input name="replication_factor" id="create-rf" type="number" min="1" placeholder="default.replication.factor"></label>
<label>Configs (one KEY=VALUE a line) <textarea name="configs" id="create-configs" rows="3" cols="40"></textarea></label>
<button type="submit">Create topic</button>
</form>
<p id="create-result" role="status"></p>
{{end}}`

const groupBody = `{{define "body"}}
<p><a href="{{.GroupHref}}">Members, offsets and lag of {{.Group}}</a></p>
<h2>Reset offsets</h2>
<form id="reset" class="actions">
<label>Topic <input name="topic" id="reset-topic" required></label>
<label>To <input name="to" id="reset-to" required placeholder="earliest, latest, current, OFFSET, @TIMESTAMP, RFC 3339 time"></label>
<label>Partitions <input name="partitions" id="reset-partitions" placeholder="all, or 0,2"></label>
<label><input type="checkbox" name="dry_run" id="reset-dry" checked> dry run (show, change nothing)</label>
<button type="submit">Reset offsets</button>
</form>
<table class="data" id="reset-result"><thead><tr><th class="num">Partition</th><th class="num">Old</th><th class="num">New</th></tr></thead><tbody></tbody></table>
<p id="reset-status" role="status"></p>
<h2>Delete the group</h2>
<form id="delete-group" class="actions">
<label>Type the group's id to confirm <input name="confirm" id="delete-group-confirm"></label>
<button type="submit">Delete group</button>
</form>
<p id="delete-group-result" role="status"></p>
{{end}}`
