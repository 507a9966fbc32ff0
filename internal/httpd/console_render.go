package httpd

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// assets holds the console's templates (assets/templates: layout.html and one file
// per page, each defining "content") and its static files (assets/static, served at
// /assets/). Nothing is fetched from elsewhere: the console works offline.
//
//go:embed assets/templates/*.html assets/static/*
var assets embed.FS

// pages are the parsed templates, one set per page (the layout plus that page).
type pages struct {
	byFile map[string]*template.Template
	errTpl *template.Template
}

// navEntries are the nav bar's links, in order.
var navEntries = []struct{ Key, Href, Label string }{
	{"cluster", "/", "Cluster"},
	{"nodes", "/nodes", "Nodes"},
	{"topics", "/topics", "Topics"},
	{"groups", "/groups", "Consumer groups"},
	{"reassignments", "/reassignments", "Reassignments"},
	{"mirrors", "/mirrors", "Mirrors"},
	{"links", "/links", "Links"},
	{"acls", "/acls", "ACLs"},
	{"users", "/users", "Users"},
	{"quotas", "/quotas", "Quotas"},
}

// pageData is what the layout renders: the page's own data is D.
type pageData struct {
	Title   string
	Nav     string
	APIPath string
	Header  *Header
	Code    int
	Error   string
	D       any
	// User and CSRFToken are the signed-in user and its session's token, for the
	// sign-out form ("" on an open console).
	User, CSRFToken string
	// Frame's fields, for a page drawn by another package (RenderFrame).
	Scripts      []string
	Topic, Group string
	NoRefresh    bool
}

// Frame is a console page drawn outside this package (internal/console's record
// browser, forms and admin pages) in the layout of this package's own pages: the
// same header, nav bar, node line and sign-out form.
type Frame struct {
	Title string
	// Nav is the nav bar's entry to mark (a navEntries key).
	Nav string
	// APIPath is the page's JSON twin, linked from the header ("" for none).
	APIPath string
	// Header is the node line (which node answered, at which metadata offset, its
	// warnings); nil for none.
	Header *Header
	// Code is the HTTP status (0 is 200).
	Code int
	// Scripts are more scripts the page loads (deferred), paths of this server.
	Scripts []string
	// Topic and Group are <body>'s data-topic and data-group, read by the scripts.
	Topic, Group string
	// NoRefresh hides the auto-refresh switch: a page of forms would lose what the
	// user typed.
	NoRefresh bool
}

// frameTpl is the layout whose content is a Frame's ready HTML.
var frameTpl = template.Must(template.Must(template.New("layout.html").Funcs(templateFuncs).
	ParseFS(assets, "assets/templates/layout.html")).Parse(`{{define "content"}}{{.D}}{{end}}`))

// RenderFrame writes content (HTML the caller rendered with html/template) in the
// console's layout described by f, with r's session's sign-out form.
func RenderFrame(w http.ResponseWriter, r *http.Request, f Frame, content template.HTML) {
	code := f.Code
	if code == 0 {
		code = http.StatusOK
	}
	pd := pageData{Title: f.Title, Nav: f.Nav, APIPath: f.APIPath, Header: f.Header, Code: code, D: content,
		Scripts: f.Scripts, Topic: f.Topic, Group: f.Group, NoRefresh: f.NoRefresh}
	writePage(w, frameTpl, code, withSessionOf(r, pd))
}

// withSessionOf fills pd's sign-out fields from r's session.
func withSessionOf(r *http.Request, pd pageData) pageData {
	if s := SessionFrom(r.Context()); s != nil && s.User != "" {
		pd.User, pd.CSRFToken = s.User, s.csrf
	}
	return pd
}

// headed is every API answer (they embed Header).
type headed interface{ header() *Header }

func (h *Header) header() *Header { return h }

func loadPages() *pages {
	p := &pages{byFile: map[string]*template.Template{}}
	files, err := fs.Glob(assets, "assets/templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimPrefix(f, "assets/templates/")
		if name == "layout.html" {
			continue
		}
		// The templates are compiled into the binary: a parse error is a bug that
		// every test of the console catches.
		t := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(assets, "assets/templates/layout.html", f))
		p.byFile[name] = t
	}
	p.errTpl = p.byFile["error.html"]
	return p
}

// render writes v's page around data.
func (p *pages) render(w http.ResponseWriter, r *http.Request, v view, data any) {
	pd := pageData{Title: v.title(r), Nav: v.nav, APIPath: apiPathOf(r), Code: http.StatusOK, D: data}
	if h, ok := data.(headed); ok {
		pd.Header = h.header()
	}
	p.write(w, p.byFile[v.tmpl], http.StatusOK, withSessionOf(r, pd))
}

// renderError writes the error page (with the nav bar) with status code.
func (p *pages) renderError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	pd := pageData{Title: http.StatusText(code), Code: code, Error: msg}
	p.write(w, p.errTpl, code, withSessionOf(r, pd))
}

// write renders into a buffer first, so that a template error is a clean 500
// rather than half a page.
func (p *pages) write(w http.ResponseWriter, t *template.Template, code int, pd pageData) {
	writePage(w, t, code, pd)
}

func writePage(w http.ResponseWriter, t *template.Template, code int, pd pageData) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", pd); err != nil {
		http.Error(w, "console: rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// apiPathOf is the /api/v1 twin of a page's path.
func apiPathOf(r *http.Request) string {
	if r.URL.Path == "/" {
		return "/api/v1/cluster"
	}
	return "/api/v1" + r.URL.EscapedPath()
}

// serveAsset serves assets/static at /assets/.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	static, _ := fs.Sub(assets, "assets/static")
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.StripPrefix("/assets/", http.FileServerFS(static)).ServeHTTP(w, r)
}

var templateFuncs = template.FuncMap{
	"nav":         func() any { return navEntries },
	"topicHref":   func(name string) string { return "/topics/" + url.PathEscape(name) },
	"groupHref":   func(id string) string { return "/groups/" + url.PathEscape(id) },
	"mirrorHref":  func(name string) string { return "/mirrors#mirror-" + url.PathEscape(name) },
	"ids":         formatIDs,
	"has":         hasID,
	"off":         formatOffset,
	"ago":         formatAgo,
	"ts":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"secs":        func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" },
	"statusLabel": statusLabel,
	"join":        strings.Join,
	"deref":       func(v *int64) int64 { return *v },
	"bytes":       formatBytes,
	"rate":        formatRate,
	"byterate": func(r *float64) string {
		if r == nil {
			return "—"
		}
		return formatBytes(ptr(int64(*r))) + "/s"
	},
	"eta":      formatETA,
	"progress": progressPercent,
	"lagClass": func(lag *int64) string {
		switch {
		case lag == nil:
			return "unknown"
		case *lag > 0:
			return "behind"
		}
		return ""
	},
}

func formatIDs(ids []int32) string {
	if len(ids) == 0 {
		return "—"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}

func hasID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// formatOffset shows an unknown offset as a dash, never as 0.
func formatOffset(o *int64) string {
	if o == nil {
		return "—"
	}
	return strconv.FormatInt(*o, 10)
}

func formatAgo(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%.1f s ago", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%.1f h ago", d.Hours())
}

func statusLabel(s string) string {
	switch s {
	case StatusOffline:
		return "offline"
	case StatusUnderMinISR:
		return "under min ISR"
	case StatusUnderReplicated:
		return "under-replicated"
	case StatusOK:
		return "ok"
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// formatBytes shows a size in binary units, an unknown one as a dash.
func formatBytes(b *int64) string {
	if b == nil {
		return "—"
	}
	v := float64(*b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", *b)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= 1024
	}
	return ""
}

// formatRate shows a per-second rate, an unknown one as a dash.
func formatRate(r *float64) string {
	switch {
	case r == nil:
		return "—"
	case *r >= 100 || *r == 0:
		return strconv.FormatFloat(*r, 'f', 0, 64)
	}
	return strconv.FormatFloat(*r, 'f', 1, 64)
}

// formatETA shows seconds left as the CLI does (1h2m3s), unknown as a dash.
func formatETA(s *float64) string {
	if s == nil {
		return "—"
	}
	return time.Duration(*s * float64(time.Second)).Round(time.Second).String()
}

// progressPercent is copied out of copied+left in percent, "" when unknown.
func progressPercent(copied, left *int64) string {
	if copied == nil || left == nil {
		return ""
	}
	if *copied+*left == 0 {
		return "100"
	}
	return strconv.Itoa(int(*copied * 100 / (*copied + *left)))
}
