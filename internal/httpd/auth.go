package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sign-in to the console (docs/security.md, "The HTTP port"). When Options.Login is
// set (the node has a Kafka listener that requires SASL), every console page and
// /api/v1/ call needs a session: an API call without one is answered 401 with a JSON
// error, a page is redirected to /login. /metrics, /healthz, /readyz and the
// console's static assets stay open. The user signs in with a SASL user of the
// cluster and its password, checked by Login.Check exactly as the Kafka listener
// checks a SASL login; what the session may then see is decided by the ConsoleSource
// with the Kafka ACLs of User:<name> (SessionFrom, ClientHost). Over HTTPS with
// Options.ClientCAFiles, a browser that presents a client certificate signed by one of
// those CAs is signed in as its subject, as a Kafka TLS listener names it, without a
// password (sessionOf).
//
// Without Options.Login the console is open as before; GET /api/v1/session then gives
// an anonymous session whose only use is the CSRF token writes need.

// Login configures the console's sign-in.
type Login struct {
	// Check verifies user's password with mechanism ("" lets the node choose), as
	// the Kafka listener would. A wrong password or an unknown user is an error
	// wrapping ErrBadCredentials (the two alike); a mechanism the node does not offer
	// is another error (400). It must not block beyond ctx.
	Check func(ctx context.Context, mechanism, user, password string) error
	// Idle is how long a session lives without a request (DefaultSessionIdle).
	Idle time.Duration
}

// ErrBadCredentials is wrapped by Login.Check's refusal of a user and password.
var ErrBadCredentials = errors.New("wrong user name or password")

// SessionInfo is the answer of POST /api/v1/login and GET /api/v1/session.
type SessionInfo struct {
	// LoginRequired: the node's Kafka listeners require authentication, so the
	// console does too. False for an open console's anonymous session.
	LoginRequired bool   `json:"login_required"`
	User          string `json:"user,omitempty"`
	Principal     string `json:"principal,omitempty"`
	Mechanism     string `json:"mechanism,omitempty"`
	// CSRFToken goes in the X-CSRF-Token header of every write of this session.
	CSRFToken string `json:"csrf_token"`
	// IdleTimeoutSeconds is how long the session lives without a request.
	IdleTimeoutSeconds int64 `json:"idle_timeout_seconds"`
}

// LogoutInfo is the answer of POST /api/v1/logout.
type LogoutInfo struct {
	LoggedOut bool   `json:"logged_out"`
	User      string `json:"user,omitempty"`
}

// authn is the sign-in of one HTTP server.
type authn struct {
	login    *Login // nil: the console is open
	sessions *sessions
	logger   *slog.Logger
}

func newAuthn(login *Login, logger *slog.Logger) *authn {
	idle := DefaultSessionIdle
	if login != nil && login.Idle > 0 {
		idle = login.Idle
	}
	return &authn{login: login, sessions: newSessions(idle), logger: logger}
}

func (a *authn) required() bool { return a.login != nil }

// routes adds the sign-in endpoints to mux.
func (a *authn) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/login", a.apiLogin)
	mux.HandleFunc("POST /api/v1/logout", a.apiLogout)
	mux.HandleFunc("GET /api/v1/session", a.apiSession)
	mux.HandleFunc("GET /login", a.loginPage)
	mux.HandleFunc("POST /login", a.formLogin)
	mux.HandleFunc("POST /logout", a.formLogout)
}

// guard is next behind the sign-in: it puts the request's session (if any) and the
// client's host in its context, and refuses a request without a signed-in session
// when a login is required.
func (a *authn) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withClientHost(r)
		s := a.sessionOf(w, r)
		if s != nil {
			r = r.WithContext(withSession(r.Context(), s))
		}
		if a.required() && (s == nil || s.User == "") && !strings.HasPrefix(r.URL.Path, "/assets/") {
			if isAPI(r) {
				writeAPIError(w, http.StatusUnauthorized, "not signed in: this node's Kafka listeners require authentication, "+
					"so its console does too: POST /api/v1/login with username and password (a SASL user of the cluster)")
				return
			}
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CertificateMechanism is the Mechanism of a session signed in by the client
// certificate the browser presented.
const CertificateMechanism = "SSL"

// certificateUser is the user of r's verified client certificate, as a Kafka TLS
// listener names it: the leaf's subject in RFC 2253 form (CN=alice,O=example), so
// that the principal User:CN=alice,O=example has the same ACLs on both ports; "" when
// r presented none (or the server asks for none: Options.ClientCAFiles unset).
func certificateUser(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return ""
	}
	return r.TLS.VerifiedChains[0][0].Subject.String()
}

// sessionOf is r's session. On a console that requires a login, a request with a
// verified client certificate and no session of that certificate's user is signed in
// as that user on the spot (no password asked): a cookie session is started, so that
// its CSRF token serves the writes that follow. A session signed in with a password
// is kept as it is.
func (a *authn) sessionOf(w http.ResponseWriter, r *http.Request) *Session {
	s := a.sessions.lookup(r)
	if !a.required() {
		return s
	}
	user := certificateUser(r)
	if user == "" || (s != nil && s.User != "" && (s.Mechanism != CertificateMechanism || s.User == user)) {
		return s
	}
	if s != nil {
		a.sessions.end(s)
	}
	ns, err := a.sessions.create(user, CertificateMechanism)
	if err != nil {
		a.logger.Warn("console login by client certificate refused", "user", user, "client", r.RemoteAddr, "err", err)
		return nil
	}
	setCookie(w, r, ns)
	a.logger.Info("console login", "user", user, "mechanism", CertificateMechanism, "client", r.RemoteAddr)
	return ns
}

// credentials are the fields of a login, from a JSON body or a form.
type credentials struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	Mechanism string `json:"mechanism"`
	Next      string `json:"-"`
}

// maxLoginBody bounds a login's body.
const maxLoginBody = 64 << 10

func readCredentials(w http.ResponseWriter, r *http.Request) (credentials, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	var c credentials
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			return c, fmt.Errorf("the login's JSON body: %w (want {\"username\", \"password\", \"mechanism\"?})", err)
		}
		return c, nil
	}
	if err := r.ParseForm(); err != nil {
		return c, fmt.Errorf("the login's form: %w", err)
	}
	c = credentials{Username: r.PostForm.Get("username"), Password: r.PostForm.Get("password"),
		Mechanism: r.PostForm.Get("mechanism"), Next: r.PostForm.Get("next")}
	return c, nil
}

// signIn checks c and starts its session, replacing the request's old one (a new id
// at every login, so an id planted before it is worth nothing after). It returns
// the HTTP status of a refusal with its message.
func (a *authn) signIn(w http.ResponseWriter, r *http.Request, c credentials) (*Session, int, error) {
	if !a.required() {
		return nil, http.StatusNotFound, errors.New("this node's console needs no login: none of its Kafka listeners requires authentication")
	}
	if c.Username == "" || c.Password == "" {
		return nil, http.StatusBadRequest, errors.New("the login needs a username and a password (a SASL user of the cluster)")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := a.login.Check(ctx, c.Mechanism, c.Username, c.Password); err != nil {
		if errors.Is(err, ErrBadCredentials) {
			a.logger.Info("console login failed", "user", c.Username, "mechanism", c.Mechanism, "client", r.RemoteAddr)
			return nil, http.StatusUnauthorized, fmt.Errorf("login failed for user %q: wrong user name or password", c.Username)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("login failed for user %q: %w", c.Username, err)
	}
	if old := a.sessions.lookup(r); old != nil {
		a.sessions.end(old)
	}
	mech := c.Mechanism
	if mech == "" {
		mech = "PLAIN"
	}
	s, err := a.sessions.create(c.Username, mech)
	if err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	setCookie(w, r, s)
	a.logger.Info("console login", "user", c.Username, "mechanism", mech, "client", r.RemoteAddr)
	return s, http.StatusOK, nil
}

func (a *authn) info(s *Session) SessionInfo {
	in := SessionInfo{LoginRequired: a.required(), User: s.User, Mechanism: s.Mechanism, CSRFToken: s.csrf,
		IdleTimeoutSeconds: int64(a.sessions.idle / time.Second)}
	if s.User != "" {
		in.Principal = s.Principal()
	} else {
		in.Mechanism = ""
	}
	return in
}

func (a *authn) apiLogin(w http.ResponseWriter, r *http.Request) {
	c, err := readCredentials(w, r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	s, code, err := a.signIn(w, r, c)
	if err != nil {
		writeAPIError(w, code, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, a.info(s))
}

// apiLogout ends the request's session. It is a write: it needs the CSRF token, so
// another site cannot sign the user out.
func (a *authn) apiLogout(w http.ResponseWriter, r *http.Request) {
	s := a.sessions.lookup(r)
	if s == nil {
		writeAPIError(w, http.StatusUnauthorized, "not signed in: no session to end")
		return
	}
	if err := CheckCSRF(r.WithContext(withSession(r.Context(), s))); err != nil {
		writeAPIError(w, http.StatusForbidden, err.Error())
		return
	}
	a.sessions.end(s)
	clearCookie(w, r)
	writeJSON(w, http.StatusOK, LogoutInfo{LoggedOut: true, User: s.User})
}

// apiSession is the request's session with its CSRF token. An open console gives a
// new anonymous session when the request has none.
func (a *authn) apiSession(w http.ResponseWriter, r *http.Request) {
	s := a.sessionOf(w, r)
	if s == nil && a.required() {
		writeAPIError(w, http.StatusUnauthorized, "not signed in: POST /api/v1/login with username and password (a SASL user of the cluster)")
		return
	}
	if s == nil {
		var err error
		if s, err = a.sessions.create("", ""); err != nil {
			writeAPIError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		setCookie(w, r, s)
	}
	writeJSON(w, http.StatusOK, a.info(s))
}

// localNext is where to go after the login page: a path of this server, "/" when next
// is empty or would leave it (an absolute URL, //host).
func localNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

var loginTpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · Runnel</title>
<link rel="stylesheet" href="/assets/console.css"></head>
<body><main class="login">
<h1>Sign in to Runnel</h1>
<p>This cluster's Kafka listeners require authentication: sign in with a SASL user of the cluster.</p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<p><label>User <input name="username" autocomplete="username" required value="{{.User}}"></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p>
</form></main></body></html>
`))

type loginPageData struct{ Error, Next, User string }

func (a *authn) renderLogin(w http.ResponseWriter, code int, d loginPageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := loginTpl.Execute(w, d); err != nil {
		a.logger.Warn("console: rendering the login page", "err", err)
	}
}

func (a *authn) loginPage(w http.ResponseWriter, r *http.Request) {
	if !a.required() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if s := a.sessionOf(w, r); s != nil && s.Mechanism == CertificateMechanism {
		// Signed in by the certificate the browser presents: no password to ask.
		http.Redirect(w, r, localNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	a.renderLogin(w, http.StatusOK, loginPageData{Next: localNext(r.URL.Query().Get("next"))})
}

// formLogin is the login page's form: on success it goes on to the page asked for.
func (a *authn) formLogin(w http.ResponseWriter, r *http.Request) {
	c, err := readCredentials(w, r)
	if err != nil {
		a.renderLogin(w, http.StatusBadRequest, loginPageData{Error: err.Error(), Next: "/"})
		return
	}
	if _, code, err := a.signIn(w, r, c); err != nil {
		a.renderLogin(w, code, loginPageData{Error: err.Error(), Next: localNext(c.Next), User: c.Username})
		return
	}
	http.Redirect(w, r, localNext(c.Next), http.StatusSeeOther)
}

// formLogout is the sign-out form of every page: the token comes as the form field
// csrf_token (the page carries it; another site cannot read it).
func (a *authn) formLogout(w http.ResponseWriter, r *http.Request) {
	s := a.sessions.lookup(r)
	if s == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil || !tokenMatches(s, r.PostForm.Get("csrf_token")) {
		http.Error(w, "sign-out refused: the form's csrf_token does not match this session's", http.StatusForbidden)
		return
	}
	a.sessions.end(s)
	clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
