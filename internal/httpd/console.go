package httpd

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// The web console: server-rendered HTML pages (console_render.go, templates and CSS in
// assets/) and the JSON API (api.go) over the same ConsoleSource, so a page and its
// /api/v1 twin always show the same data. Its own pages and API are read-only (GET
// and HEAD); the writes are the endpoints of the handler in front of it
// (internal/console, ConsoleOptions.Endpoints). Any other method is answered 405
// naming the methods the path takes, before anything is read.

// ConsoleOptions configure NewConsole.
type ConsoleOptions struct {
	Source ConsoleSource
	// Timeout bounds the gathering of one answer (default DefaultConsoleTimeout):
	// what a leader or a coordinator does not answer within it is shown as
	// unavailable rather than making the page hang.
	Timeout time.Duration
	Logger  *slog.Logger
	// Endpoints are the "METHOD /path" patterns (http.ServeMux's syntax) the handler
	// in front of this one serves itself: a 405 here names their methods among those
	// a path takes, and the 404 of an unknown API path lists them.
	Endpoints []string
}

// DefaultConsoleTimeout is ConsoleOptions.Timeout's default.
const DefaultConsoleTimeout = 3 * time.Second

// console is the handler NewConsole returns.
type console struct {
	src     ConsoleSource
	timeout time.Duration
	logger  *slog.Logger
	pages   *pages
	mux     *http.ServeMux
	// others matches ConsoleOptions.Endpoints (to a handler that is never run).
	others *http.ServeMux
	// endpoints is the list the 404 of an unknown API path gives.
	endpoints string
}

// view is one page and its API twin: the HTML page at page, the JSON at api, both
// filled by get.
type view struct {
	nav   string // the nav bar entry it belongs to
	tmpl  string // its template file in assets/
	title func(r *http.Request) string
	get   func(ctx context.Context, r *http.Request) (any, error)
}

// NewConsole returns the console's handler for "/" (pages, assets and /api/v1/).
func NewConsole(o ConsoleOptions) http.Handler {
	if o.Timeout <= 0 {
		o.Timeout = DefaultConsoleTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &console{src: o.Source, timeout: o.Timeout, logger: o.Logger, pages: loadPages(), mux: http.NewServeMux(),
		others: http.NewServeMux()}
	for _, p := range o.Endpoints {
		c.others.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	s := o.Source
	views := map[string]view{
		"cluster": {"cluster", "cluster.html", fixed("Cluster"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Cluster(ctx) }},
		"nodes": {"nodes", "nodes.html", fixed("Nodes"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Nodes(ctx) }},
		"topics": {"topics", "topics.html", fixed("Topics"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Topics(ctx) }},
		"topic": {"topics", "topic.html", func(r *http.Request) string { return "Topic " + r.PathValue("name") },
			func(ctx context.Context, r *http.Request) (any, error) { return s.Topic(ctx, r.PathValue("name")) }},
		"groups": {"groups", "groups.html", fixed("Consumer groups"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Groups(ctx) }},
		"group": {"groups", "group.html", func(r *http.Request) string { return "Group " + r.PathValue("id") },
			func(ctx context.Context, r *http.Request) (any, error) { return s.Group(ctx, r.PathValue("id")) }},
		"reassignments": {"reassignments", "reassignments.html", fixed("Reassignments"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Reassignments(ctx) }},
		"mirrors": {"mirrors", "mirrors.html", fixed("Mirrors"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Mirrors(ctx) }},
		"links": {"links", "links.html", fixed("Cluster links"),
			func(ctx context.Context, _ *http.Request) (any, error) { return s.Links(ctx) }},
	}
	// Path wildcards match one escaped segment, so a group id holding '/' (sent as
	// %2F, as the pages' links do) stays one id.
	routes := []struct{ page, api, view string }{
		{"/{$}", "/api/v1/cluster", "cluster"},
		{"/nodes", "/api/v1/nodes", "nodes"},
		{"/topics", "/api/v1/topics", "topics"},
		{"/topics/{name}", "/api/v1/topics/{name}", "topic"},
		{"/groups", "/api/v1/groups", "groups"},
		{"/groups/{id}", "/api/v1/groups/{id}", "group"},
		{"/reassignments", "/api/v1/reassignments", "reassignments"},
		{"/mirrors", "/api/v1/mirrors", "mirrors"},
		{"/links", "/api/v1/links", "links"},
	}
	for _, rt := range routes {
		v := views[rt.view]
		c.mux.HandleFunc(rt.page, c.servePage(v))
		c.mux.HandleFunc(rt.api, c.serveAPI(v))
	}
	c.mux.HandleFunc("/assets/", serveAsset)
	c.endpoints = apiEndpoints(routes, o.Endpoints)
	c.mux.HandleFunc("/api/", c.apiNotFound)
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.pages.renderError(w, r, http.StatusNotFound, fmt.Sprintf("There is no page %s.", r.URL.Path))
	})
	return c
}

func fixed(title string) func(*http.Request) string {
	return func(*http.Request) string { return title }
}

// signInEndpoints are the API endpoints of the sign-in (auth.go).
var signInEndpoints = []string{"POST /api/v1/login", "POST /api/v1/logout", "GET /api/v1/session"}

// apiEndpoints is every API endpoint, METHOD /path: this package's views, the
// sign-in's, then the API ones among others.
func apiEndpoints(routes []struct{ page, api, view string }, others []string) string {
	var eps []string
	for _, rt := range routes {
		eps = append(eps, "GET "+rt.api)
	}
	eps = append(eps, signInEndpoints...)
	for _, p := range others {
		if _, path, _ := strings.Cut(p, " "); strings.HasPrefix(path, "/api/") {
			eps = append(eps, p)
		}
	}
	return strings.Join(eps, ", ")
}

func (c *console) apiNotFound(w http.ResponseWriter, r *http.Request) {
	writeAPIError(w, http.StatusNotFound, fmt.Sprintf("no API endpoint %s; the endpoints are %s", r.URL.Path, c.endpoints))
}

// methods are the methods a path of the console may take, in the order an Allow
// header lists them.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed is the methods r's path takes: GET and HEAD on a page or API path of this
// package, and those of ConsoleOptions.Endpoints that match it.
func (c *console) allowed(r *http.Request) []string {
	var out []string
	for _, m := range methods {
		q := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		own := false
		if m == http.MethodGet || m == http.MethodHead {
			_, p := c.mux.Handler(q)
			own = p != "" && p != "/" && p != "/api/" && p != "/assets/"
		}
		if _, p := c.others.Handler(q); own || p != "" {
			out = append(out, m)
		}
	}
	return out
}

// ServeHTTP serves GET and HEAD; any other method reaching it is not served for the
// path: 405 with the methods the path takes, or 404 when it takes none.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		allow := c.allowed(r)
		if len(allow) == 0 {
			if isAPI(r) {
				c.apiNotFound(w, r)
			} else {
				c.pages.renderError(w, r, http.StatusNotFound, fmt.Sprintf("There is no page %s.", r.URL.Path))
			}
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		msg := fmt.Sprintf("method %s not allowed on %s: it takes %s", r.Method, r.URL.Path, strings.Join(allow, ", "))
		if isAPI(r) {
			writeAPIError(w, http.StatusMethodNotAllowed, msg)
		} else {
			http.Error(w, msg, http.StatusMethodNotAllowed)
		}
		return
	}
	c.mux.ServeHTTP(w, r)
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// gather runs v.get under the console's deadline.
func (c *console) gather(r *http.Request, v view) (any, error) {
	ctx, cancel := context.WithTimeout(r.Context(), c.timeout)
	defer cancel()
	data, err := v.get(ctx, r)
	if err != nil && statusOf(err) == http.StatusInternalServerError {
		c.logger.Warn("console: answer failed", "path", r.URL.Path, "err", err)
	}
	return data, err
}

func (c *console) serveAPI(v view) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := c.gather(r, v)
		if err != nil {
			writeAPIError(w, statusOf(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, data)
	}
}

func (c *console) servePage(v view) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := c.gather(r, v)
		if err != nil {
			c.pages.renderError(w, r, statusOf(err), err.Error())
			return
		}
		c.pages.render(w, r, v, data)
	}
}
