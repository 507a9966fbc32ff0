package replica

import (
	"log/slog"
	"sync"
	"time"
)

// DiskMonitor knows whether this node's data disk is full: from the first append that
// found it full (Full) until a probe finds room again. The node reports that state
// (heartbeats, /readyz, a metric); the controller then moves its leaderships to
// replicas that can write. One line is logged when an episode starts and one when it
// ends. While the disk is full the probe runs every interval on a goroutine of the
// monitor's; Close stops it.
//
// The probe does the I/O (it is the node's: free space above a margin and a small
// write that works), so that the monitor decides nothing about files.
type DiskMonitor struct {
	o DiskMonitorOptions

	mu sync.Mutex // guards the fields below
	// since is when the current episode started, zero while the disk has room.
	since  time.Time
	closed bool
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the probe goroutine of an episode returns; nil when none ran
}

// DiskMonitorOptions configure a DiskMonitor.
type DiskMonitorOptions struct {
	// Dir is the data directory, for the log lines.
	Dir string
	// Probe reports whether the disk has room again (nil error: it has).
	Probe func() error
	// Interval paces the probes while the disk is full (default 1 s).
	Interval time.Duration
	// OnChange, if set, is called (on the caller's or the probe's goroutine, without
	// the monitor's lock) when the disk becomes full or has room again. Calls of two
	// episodes may overlap: read State for the current one.
	OnChange func(full bool)
	Logger   *slog.Logger
	Now      func() time.Time
}

// NewDiskMonitor returns a monitor that sees the disk with room.
func NewDiskMonitor(o DiskMonitorOptions) *DiskMonitor {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &DiskMonitor{o: o, stop: make(chan struct{})}
}

// Full records that an append found the disk full (err says where). The first call of
// an episode logs it, starts probing and calls OnChange; later ones do nothing.
func (d *DiskMonitor) Full(err error) {
	d.mu.Lock()
	if d.closed || !d.since.IsZero() {
		d.mu.Unlock()
		return
	}
	d.since = d.o.Now()
	done := make(chan struct{})
	d.done = done
	d.mu.Unlock()
	d.o.Logger.Error("disk full: this node stays up, serves reads and hands its leaderships to replicas that can write; "+
		"writes resume by themselves once space is freed", "data_dir", d.o.Dir, "err", err)
	if d.o.OnChange != nil {
		d.o.OnChange(true)
	}
	go d.probe(done)
}

// probe runs while the disk is full: it ends the episode once Probe succeeds.
func (d *DiskMonitor) probe(done chan struct{}) {
	defer close(done)
	t := time.NewTicker(d.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		if d.o.Probe() != nil {
			continue
		}
		d.mu.Lock()
		since := d.since
		d.since = time.Time{}
		d.mu.Unlock()
		d.o.Logger.Info("disk has room again: this node takes writes again", "data_dir", d.o.Dir,
			"full_for", d.o.Now().Sub(since).Round(time.Millisecond))
		if d.o.OnChange != nil {
			d.o.OnChange(false)
		}
		return
	}
}

// State reports whether the disk is full, and since when.
func (d *DiskMonitor) State() (since time.Time, full bool) {
	if d == nil {
		return time.Time{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.since, !d.since.IsZero()
}

// IsFull reports whether the disk is full.
func (d *DiskMonitor) IsFull() bool {
	_, full := d.State()
	return full
}

// Close stops the probing and waits for it. Full does nothing afterwards.
func (d *DiskMonitor) Close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	close(d.stop)
	done := d.done
	d.mu.Unlock()
	if done != nil {
		<-done
	}
}
