// Command kfakeserver runs franz-go's kfake, an in-memory Kafka-protocol cluster, as a
// benchmark peer for runnel (see bench/compare.sh). It prints its listener addresses,
// one per line, then serves until SIGINT or SIGTERM.
//
//	kfakeserver -port 19092                       # memory only
//	kfakeserver -port 19092 -data-dir D -sync     # persisted, an fsync per batch
//	kfakeserver -port 19092 -blackhole            # produce discards records: the load generator's ceiling
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "Kafka listener port on 127.0.0.1 (0: any)")
	brokers := flag.Int("brokers", 1, "brokers in the cluster; ports port, port+1, ...")
	dataDir := flag.String("data-dir", "", "persist to this directory (kfake.DataDir)")
	syncWrites := flag.Bool("sync", false, "fsync every batch (kfake.SyncWrites); needs -data-dir")
	blackhole := flag.Bool("blackhole", false, "accept produce requests without storing the records (kfake.BlackholeProduce)")
	flag.Parse()
	if err := run(*port, *brokers, *dataDir, *syncWrites, *blackhole); err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(1)
	}
}

func run(port, brokers int, dataDir string, syncWrites, blackhole bool) error {
	if syncWrites && dataDir == "" {
		return fmt.Errorf("-sync needs -data-dir")
	}
	opts := []kfake.Opt{kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation()}
	if port > 0 {
		ports := make([]int, brokers)
		for i := range ports {
			ports[i] = port + i
		}
		opts = append(opts, kfake.Ports(ports...))
	}
	if dataDir != "" {
		opts = append(opts, kfake.DataDir(dataDir))
	}
	if syncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	if blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, addr := range c.ListenAddrs() {
		fmt.Println(addr)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}
