package httpd

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Sessions of the console (docs/security.md, "The HTTP port"): a random id in a cookie,
// kept in this node's memory only (a restart signs everyone out; each node of a
// cluster has its own sessions), ended by logout or by DefaultSessionIdle without a
// request. A session also carries the CSRF token every write must send in the
// X-CSRF-Token header (CheckCSRF): a cross-site form or script cannot read it, and
// the cookie is SameSite=Strict besides.

// SessionCookie is the name of the session cookie.
const SessionCookie = "runnel_session"

// CSRFHeader is the header a write carries its session's CSRF token in.
const CSRFHeader = "X-CSRF-Token"

// DefaultSessionIdle is how long a session lives without a request.
const DefaultSessionIdle = 30 * time.Minute

// maxSessions bounds the sessions kept: past it the login that would add one is
// refused (503) until some expire, so a flood of logins cannot fill the memory.
const maxSessions = 10000

// Session is one signed-in browser (or the anonymous session of an open console,
// which exists only to carry a CSRF token).
type Session struct {
	// User is the SASL user signed in ("" for the anonymous session of an open
	// console). Immutable.
	User string
	// Mechanism is what the password was checked with. Immutable.
	Mechanism string
	id, csrf  string // immutable
	// lastUsed is guarded by sessions.mu.
	lastUsed time.Time
}

// Principal is the ACL principal of the session's user: User:<name>.
func (s *Session) Principal() string { return "User:" + s.User }

// sessions are the live sessions of one HTTP server.
type sessions struct {
	idle time.Duration
	now  func() time.Time // time.Now; tests may move it
	mu   sync.Mutex
	byID map[string]*Session // guarded by mu
}

func newSessions(idle time.Duration) *sessions {
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	return &sessions{idle: idle, now: time.Now, byID: map[string]*Session{}}
}

// randomToken is 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errTooManySessions = errors.New("too many sessions on this node; try again once some have expired")

// create starts a session for user.
func (st *sessions) create(user, mechanism string) (*Session, error) {
	s := &Session{User: user, Mechanism: mechanism, id: randomToken(), csrf: randomToken()}
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	if len(st.byID) >= maxSessions {
		st.pruneLocked(now)
		if len(st.byID) >= maxSessions {
			return nil, errTooManySessions
		}
	}
	s.lastUsed = now
	st.byID[s.id] = s
	return s, nil
}

// pruneLocked drops the expired sessions.
func (st *sessions) pruneLocked(now time.Time) {
	for id, s := range st.byID {
		if now.Sub(s.lastUsed) >= st.idle {
			delete(st.byID, id)
		}
	}
}

// lookup is the live session of r's cookie, its idle time restarted; nil when there
// is none or it expired (an expired one is dropped).
func (st *sessions) lookup(r *http.Request) *Session {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.byID[c.Value]
	if s == nil {
		return nil
	}
	now := st.now()
	if now.Sub(s.lastUsed) >= st.idle {
		delete(st.byID, s.id)
		return nil
	}
	s.lastUsed = now
	return s
}

// end drops s.
func (st *sessions) end(s *Session) {
	st.mu.Lock()
	delete(st.byID, s.id)
	st.mu.Unlock()
}

// setCookie sends s's cookie: HttpOnly (no script reads it), SameSite=Strict (no
// other site's page sends it), Secure when served over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, s *Session) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// clearCookie tells the browser to drop the session cookie.
func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

type sessionKey struct{}

// withSession is ctx carrying s.
func withSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom is the session of the request ctx belongs to, nil when it has none
// (an open console, or a request that needs no login).
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

type hostKey struct{}

// ClientHost is the IP address of the HTTP client of the request ctx belongs to, as
// Kafka's ACLs name hosts ("" when unknown).
func ClientHost(ctx context.Context) string {
	h, _ := ctx.Value(hostKey{}).(string)
	return h
}

func withClientHost(r *http.Request) *http.Request {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return r.WithContext(context.WithValue(r.Context(), hostKey{}, host))
}

// ErrCSRF is wrapped by CheckCSRF's refusals (403).
var ErrCSRF = errors.New("CSRF check failed")

// CheckCSRF is the check every write endpoint makes before it acts: the request must
// belong to a session (signed in, or the anonymous one GET /api/v1/session gives an
// open console) and carry that session's token in X-CSRF-Token.
func CheckCSRF(r *http.Request) error {
	s := SessionFrom(r.Context())
	if s == nil {
		return errors.Join(ErrCSRF, errors.New("no session: GET /api/v1/session first and send its csrf_token in the X-CSRF-Token header"))
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		return errors.Join(ErrCSRF, errors.New("the X-CSRF-Token header is missing: send the csrf_token of GET /api/v1/session"))
	}
	if !tokenMatches(s, got) {
		return errors.Join(ErrCSRF, errors.New("the X-CSRF-Token header does not match this session's token"))
	}
	return nil
}

// tokenMatches compares got with s's CSRF token in constant time.
func tokenMatches(s *Session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}
