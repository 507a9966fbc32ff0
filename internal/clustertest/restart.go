package clustertest

import (
	"errors"
	"sync"
	"time"
)

// RestartTogether starts the stopped or killed nodes ids again, in that order, each
// without waiting for the one before to be ready (as nodes restarted together, when
// no metadata quorum forms until enough of them are up), then waits until every one
// is ready. A virtual node's launch returns only once it is ready, so virtual nodes
// launch on goroutines, a few milliseconds apart to keep the order.
func (c *Cluster) RestartTogether(ids ...int) {
	if c.virt != nil || c.opts.InProcess {
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for k, i := range ids {
			n := c.Node(i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = n.virt.launch(n)
			}()
			time.Sleep(10 * time.Millisecond)
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	for _, i := range ids {
		if err := c.Node(i).launch(); err != nil {
			c.t.Fatal(err)
		}
	}
	deadline := time.Now().Add(c.opts.StartTimeout)
	for _, i := range ids {
		if err := c.Node(i).waitReady(deadline); err != nil {
			c.t.Fatal(err)
		}
	}
}
