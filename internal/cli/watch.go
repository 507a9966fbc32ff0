package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// watchFlags are --watch, --interval and --watch-count of the commands that can
// refresh (group describe, cluster status).
type watchFlags struct {
	watch    bool
	interval time.Duration
	count    int
}

func (w *watchFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVarP(&w.watch, "watch", "w", false, "refresh every --interval until interrupted: in place on a terminal, one refresh after another otherwise")
	fs.DurationVar(&w.interval, "interval", 2*time.Second, "time between refreshes with --watch")
	fs.IntVar(&w.count, "watch-count", 0, "with --watch, stop after this many refreshes (0: until interrupted)")
}

func (w *watchFlags) check() error {
	if w.interval <= 0 {
		return usageErrorf("--interval must be positive")
	}
	if w.count < 0 {
		return usageErrorf("--watch-count must not be negative")
	}
	if w.count > 0 && !w.watch {
		return usageErrorf("--watch-count needs --watch")
	}
	return nil
}

// isTerminal reports whether w is a terminal (a character device); a variable for
// tests.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// clearScreen moves the cursor home and clears the screen (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// runWatch renders once, or with --watch every interval until ctx ends (exit 0) or
// --watch-count refreshes. On a terminal each refresh replaces the last one on the
// screen, under a header line (what, when); elsewhere the refreshes follow each
// other: text ones each after a line "--- TIME ---", JSON ones as a stream of JSON
// documents. A refresh that fails shows its error and the watch goes on (a node
// may be failing over); without --watch the error is the command's.
func runWatch(ctx context.Context, out, errw io.Writer, w *watchFlags, what string, asJSON bool, render func(io.Writer) error) error {
	if !w.watch {
		return render(out)
	}
	term := isTerminal(out)
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	var buf bytes.Buffer
	for n := 1; ; n++ {
		buf.Reset()
		now := time.Now()
		switch {
		case term:
			fmt.Fprintf(&buf, "%sEvery %v: %s  %s\n\n", clearScreen, w.interval, what, now.Format("2006-01-02 15:04:05"))
		case !asJSON:
			if n > 1 {
				buf.WriteByte('\n')
			}
			fmt.Fprintf(&buf, "--- %s ---\n", now.UTC().Format(time.RFC3339Nano))
		}
		if err := render(&buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if term {
				fmt.Fprintf(&buf, "runnel: %s\n", oneLine(err.Error()))
			} else {
				fmt.Fprintf(errw, "runnel: %s\n", oneLine(err.Error()))
			}
		}
		if _, err := out.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		if w.count > 0 && n >= w.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
