package httpd

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A session ends after its idle time without a request, and each request restarts it.
func TestSessionIdleTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	st := newSessions(30 * time.Minute)
	st.now = func() time.Time { return now }
	s, err := st.create("alice", "PLAIN")
	if err != nil {
		t.Fatal(err)
	}
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/topics", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: s.id})
		return r
	}
	now = now.Add(29 * time.Minute)
	if st.lookup(req()) != s {
		t.Fatal("the session ended before its idle time")
	}
	now = now.Add(29 * time.Minute) // 58 minutes after the login, 29 after the last request
	if st.lookup(req()) != s {
		t.Fatal("a request did not restart the idle time")
	}
	now = now.Add(30 * time.Minute)
	if st.lookup(req()) != nil {
		t.Fatal("the session outlived 30 minutes without a request")
	}
	if len(st.byID) != 0 {
		t.Fatalf("an expired session is kept: %d sessions", len(st.byID))
	}
}
