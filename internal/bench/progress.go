package bench

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress prints a line every second on w with the counters' totals and their rate
// over the last second, until stop is called.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// progressCounter is one counter shown on the progress line.
type progressCounter struct {
	name string
	n    *atomic.Int64
}

func startProgress(w io.Writer, mode string, counters ...progressCounter) *progress {
	p := &progress{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.loop(w, mode, counters)
	}()
	return p
}

func (p *progress) loop(w io.Writer, mode string, counters []progressCounter) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := make([]int64, len(counters))
	lastAt, start := time.Now(), time.Now()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			line := fmt.Sprintf("bench %s %4.0fs:", mode, now.Sub(start).Seconds())
			for i, c := range counters {
				n := c.n.Load()
				rate := float64(n-last[i]) / now.Sub(lastAt).Seconds()
				line += fmt.Sprintf("  %s %d (%.0f/s)", c.name, n, rate)
				last[i] = n
			}
			lastAt = now
			fmt.Fprintln(w, line)
		}
	}
}

// stop ends the progress lines and waits for the printer to exit.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}
