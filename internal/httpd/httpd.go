// Package httpd serves the node's HTTP endpoints: /metrics (Prometheus), /healthz (200
// while the process is up), /readyz (200 once the node serves its partitions, 503
// before), /debug/pprof/ for profiling when Options.Pprof (http.pprof.enable), and a
// small status page at /, or the web console (console.go) behind the sign-in of
// auth.go when the node's Kafka listeners require authentication. Served over TLS
// when Options.TLSCertFile is set.
package httpd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure the HTTP server.
type Options struct {
	Addr     string
	Registry *prometheus.Registry
	// Ready reports whether the node serves its partitions; nil error means ready.
	Ready  func() error
	Status func() string // plain-text status for the console page
	Logger *slog.Logger
	// Pprof serves Go's profiles at /debug/pprof/ (http.pprof.enable).
	Pprof bool
	// Console, when set, serves the web console at / and its JSON at /api/v1/; the
	// plain-text Status page is served at / only without it.
	Console http.Handler
	// Listen binds the listener; nil is net.Listen (tests give a nodenet.Mem host's).
	Listen func(network, addr string) (net.Listener, error)
	// Login, when set, puts the console (every page and /api/v1/ call) behind a
	// sign-in (auth.go); /metrics, /healthz and /readyz stay open.
	Login *Login
	// TLSCertFile and TLSKeyFile (http.tls.certificate.location,
	// http.tls.key.location) are PEM files: set, the server speaks HTTPS only. The
	// key may be in the certificate's file (TLSKeyFile empty or the same file).
	TLSCertFile, TLSKeyFile string
	// ClientCAFiles are PEM files of CA certificates (the truststores of the Kafka
	// listeners that take client certificates): with TLS and a Login, a client may
	// present a certificate signed by one of them and is then signed in as its
	// subject. A certificate is asked for, not required.
	ClientCAFiles []string
}

// Server is the running HTTP listener.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Start binds the listener and serves in the background.
func Start(o Options) (*Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := o.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.Console != nil {
		a := newAuthn(o.Login, o.Logger)
		a.routes(mux)
		mux.Handle("/", a.guard(o.Console))
	} else {
		mux.HandleFunc("/", statusHandler(o))
	}
	var tlsCfg *tls.Config
	if o.TLSCertFile != "" {
		keyFile := o.TLSKeyFile
		if keyFile == "" {
			keyFile = o.TLSCertFile
		}
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("http listener on %s: loading http.tls.certificate.location %s and http.tls.key.location %s: %w",
				o.Addr, o.TLSCertFile, keyFile, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if len(o.ClientCAFiles) > 0 && o.Login != nil {
			pool := x509.NewCertPool()
			for _, f := range o.ClientCAFiles {
				pem, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("http listener on %s: reading the client CAs %s: %w", o.Addr, f, err)
				}
				if !pool.AppendCertsFromPEM(pem) {
					return nil, fmt.Errorf("http listener on %s: the client CAs %s hold no PEM certificate", o.Addr, f)
				}
			}
			tlsCfg.ClientCAs, tlsCfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
		}
	}
	listen := o.Listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("http listener on %s: %w", o.Addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("http server stopped", "addr", o.Addr, "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

// statusHandler serves o.Status as plain text at /.
func statusHandler(o Options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Status != nil {
			fmt.Fprint(w, o.Status())
		}
	}
}
