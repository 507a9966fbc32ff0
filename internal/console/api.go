package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The console's own endpoints (the records and the write actions, docs/console.md):
// routed here before httpd's pages (which list them: ConsoleOptions.Endpoints). Each runs under writeTimeout, checks
// the signed-in user's ACL for the Kafka operation it stands for, and a write checks
// the session's CSRF token first.

// ErrBadRequest is wrapped by a refusal of the request's own fields (400).
var ErrBadRequest = errors.New("bad request")

// errConflict is wrapped by a refusal of the state the action finds (409), such as a
// group with members when its offsets are to be reset.
var errConflict = errors.New("conflict")

// maxBody bounds the JSON body of a write (a produced record's value included).
const maxBody = 4 << 20

// handler serves the console: its own endpoints, and httpd's pages for the rest.
type handler struct {
	src   *source
	pages http.Handler // httpd.NewConsole, made once routes ran
	mux   *http.ServeMux
	// patterns are those of handle, for httpd's 404 and 405 answers.
	patterns []string
}

// handle routes pattern (METHOD /path) to fn.
func (h *handler) handle(pattern string, fn http.HandlerFunc) {
	h.patterns = append(h.patterns, pattern)
	h.mux.HandleFunc(pattern, fn)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *handler) routes() {
	h.handle("GET /api/v1/topics/{name}/records", h.api(false, h.src.readRecords))
	h.handle("POST /api/v1/topics/{name}/records", h.api(true, h.src.produceRecord))
	h.handle("POST /api/v1/topics", h.api(true, h.src.createTopic))
	h.handle("DELETE /api/v1/topics/{name}", h.api(true, h.src.deleteTopic))
	h.handle("POST /api/v1/topics/{name}/partitions", h.api(true, h.src.addPartitions))
	h.handle("POST /api/v1/topics/{name}/configs", h.api(true, h.src.alterTopicConfigs))
	h.handle("POST /api/v1/groups/{id}/reset-offsets", h.api(true, h.src.resetOffsets))
	h.handle("DELETE /api/v1/groups/{id}", h.api(true, h.src.deleteGroup))
	h.handle("GET /api/v1/charts", h.api(false, h.src.readCharts))
	h.handle("GET /topics/{name}/records", h.page(pageRecords))
	h.handle("GET /new-topic", h.page(pageNewTopic))
	h.handle("GET /groups/{id}/manage", h.page(pageGroupManage))
	h.handle("GET /assets/actions.js", serveActionsJS)
	h.adminPages()
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.pages.ServeHTTP(w, r) })
}

// api serves one endpoint: its answer as JSON, or an httpd.APIError with the status
// its error maps to. write: the session's CSRF token is checked before anything else.
func (h *handler) api(write bool, do func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if write {
			if err := httpd.CheckCSRF(r); err != nil {
				writeError(w, err)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		out, err := do(ctx, r)
		if err != nil {
			if code := statusOf(err); code >= 500 {
				h.src.logger.Warn("console: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// statusOf maps an endpoint's error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, httpd.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errConflict):
		return http.StatusConflict
	case errors.Is(err, httpd.ErrForbidden), errors.Is(err, httpd.ErrCSRF):
		return http.StatusForbidden
	case errors.Is(err, httpd.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway // the cluster refused or failed the Kafka operation
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to tell it
}

func writeError(w http.ResponseWriter, err error) {
	code := statusOf(err)
	writeJSON(w, code, httpd.APIError{Code: code, Message: err.Error()})
}

// decodeBody reads a write's JSON body into v.
func decodeBody(r *http.Request, v any) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "" && ct != "application/json" {
		return fmt.Errorf("%w: the body must be JSON (Content-Type application/json), not %s", ErrBadRequest, ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: the JSON body of %s %s: %v", ErrBadRequest, r.Method, r.URL.Path, err)
	}
	return nil
}

// require is nil when the request of ctx may do op on res under im's ACLs, else
// httpd.ErrForbidden naming the ACL it lacks (authz.check).
func (s *source) require(ctx context.Context, im *metadata.Image, op metadata.ACLOperation, res auth.Resource) error {
	return s.acl.check(ctx, im, op, res)
}

// requireOn is require under the current image, which it returns for the rest of
// the request to read (nil with the error).
func (s *source) requireOn(ctx context.Context, op metadata.ACLOperation, res auth.Resource) (*view, error) {
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	if err := s.require(ctx, v.im, op, res); err != nil {
		return nil, err
	}
	return v, nil
}
