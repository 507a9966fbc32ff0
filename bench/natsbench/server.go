package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// serveCluster runs n JetStream servers in this process on loopback: client ports
// port..port+n-1, route ports port+100.., one store directory each under dir. It
// prints the client URLs as one comma-separated line once they are ready and serves
// until SIGINT or SIGTERM.
func serveCluster(n, port int, dir string, syncAlways bool) error {
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", port+100+i))
	}
	var servers []*server.Server
	var urls []string
	for i := range n {
		s, err := startServer(i, n, port, dir, syncAlways, strings.Join(routes, ","))
		if err != nil {
			return err
		}
		defer s.Shutdown()
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	for _, s := range servers {
		if !s.ReadyForConnections(30 * time.Second) {
			return fmt.Errorf("server %s not ready after 30s", s.Name())
		}
	}
	if err := waitJetStream(servers); err != nil {
		return err
	}
	fmt.Println(strings.Join(urls, ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

func startServer(i, n, port int, dir string, syncAlways bool, routes string) (*server.Server, error) {
	opts := &server.Options{
		ServerName: fmt.Sprintf("n%d", i+1),
		Host:       "127.0.0.1",
		Port:       port + i,
		JetStream:  true,
		StoreDir:   filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
		SyncAlways: syncAlways,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	if n > 1 {
		opts.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: port + 100 + i}
		opts.Routes = server.RoutesFromStr(routes)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("server %d: %w", i+1, err)
	}
	go s.Start()
	return s, nil
}

// waitJetStream waits until JetStream is enabled everywhere and, in a cluster, its
// meta group has a leader.
func waitJetStream(servers []*server.Server) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ready := true
		for _, s := range servers {
			if !s.JetStreamEnabled() || (len(servers) > 1 && !s.JetStreamIsCurrent()) {
				ready = false
			}
		}
		if ready && (len(servers) == 1 || hasMetaLeader(servers)) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("JetStream not ready after 60s")
}

func hasMetaLeader(servers []*server.Server) bool {
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			return true
		}
	}
	return false
}
