package replica

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestDiskMonitor(t *testing.T) {
	var room atomic.Bool
	changes := make(chan bool, 4)
	d := NewDiskMonitor(DiskMonitorOptions{Dir: "/data", Interval: 5 * time.Millisecond,
		Probe: func() error {
			if room.Load() {
				return nil
			}
			return errors.New("no room")
		},
		OnChange: func(full bool) { changes <- full }})
	defer d.Close()
	if d.IsFull() {
		t.Fatal("a new monitor sees the disk full")
	}
	d.Full(errors.New("t-0: disk full"))
	d.Full(errors.New("t-1: disk full")) // same episode: nothing new
	since, full := d.State()
	if !full || since.IsZero() || <-changes != true {
		t.Fatalf("after Full: since %v full %v", since, full)
	}
	time.Sleep(30 * time.Millisecond) // probes fail meanwhile
	if !d.IsFull() {
		t.Fatal("the episode ended while the probe failed")
	}
	room.Store(true)
	if got := <-changes; got != false {
		t.Fatal("no change to room once the probe succeeded")
	}
	if d.IsFull() {
		t.Fatal("still full after the probe succeeded")
	}
	room.Store(false)
	d.Full(errors.New("again")) // a new episode
	if !d.IsFull() || <-changes != true {
		t.Fatal("a second episode did not start")
	}
	d.Close()
	d.Close()
	select {
	case c := <-changes:
		t.Fatalf("a change (%v) after Close", c)
	default:
	}
}
