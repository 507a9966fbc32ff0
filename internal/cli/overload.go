package cli

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The overload policies themselves (--on-full, --enqueue-timeout, --rate) are the
// public client package's Producer; this file turns the flags into its options.

func parseOnFull(s string) (client.OnFull, error) {
	m, err := client.ParseOnFull(s)
	if err != nil {
		return 0, fmt.Errorf("bad --on-full %q: want block, drop or error", s)
	}
	return m, nil
}

// parseEnqueueTimeout reads --enqueue-timeout: -1 (or any negative) waits for ever, a
// bare integer is milliseconds as Kafka's queue.enqueue.timeout.ms, otherwise a Go
// duration such as 500ms or 2s.
func parseEnqueueTimeout(s string) (time.Duration, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return -1, nil
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad --enqueue-timeout %q: want -1, milliseconds or a duration like 500ms", s)
	}
	if d < 0 {
		return -1, nil
	}
	return d, nil
}

// overloadOptions turns --buffer-records, --buffer-bytes, --on-full,
// --enqueue-timeout and --rate (records per second, here for one producer) into
// Producer options, rejecting bad values as usage errors.
func (f *produceFlags) overloadOptions(rate float64) ([]client.Option, error) {
	if f.bufferRecords < 1 || f.bufferBytes < 0 {
		return nil, usageErrorf("--buffer-records must be at least 1 and --buffer-bytes at least 0")
	}
	mode, err := parseOnFull(f.onFull)
	if err != nil {
		return nil, usageError{err}
	}
	if rate < 0 {
		return nil, usageErrorf("bad --rate %v: want records per second, 0 for no limit", f.rate)
	}
	opts := []client.Option{client.WithMaxBufferedRecords(f.bufferRecords),
		client.WithMaxBufferedBytes(int64(f.bufferBytes)), client.WithOnFull(mode), client.WithRate(rate)}
	if f.enqueueTimeout != "" {
		d, err := parseEnqueueTimeout(f.enqueueTimeout)
		if err != nil {
			return nil, usageError{err}
		}
		opts = append(opts, client.WithEnqueueTimeout(d))
	}
	return opts, nil
}

// newOverloadProducer connects a Producer with the connection flags, the kgo options
// kopts and the overload options.
func newOverloadProducer(conn *connFlags, kopts []kgo.Opt, overload []client.Option) (*client.Producer, error) {
	base, err := conn.baseOpts()
	if err != nil {
		return nil, err
	}
	p, err := client.NewProducer(append([]client.Option{client.WithClientOptions(append(base, kopts...)...)}, overload...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return p, nil
}

// overloadError names the flag behind a buffer-full failure.
func overloadError(err error, f *produceFlags) error {
	if !errors.Is(err, client.ErrBufferFull) {
		return err
	}
	if f.enqueueTimeout != "" {
		if d, _ := parseEnqueueTimeout(f.enqueueTimeout); d > 0 {
			return fmt.Errorf("%w (--enqueue-timeout)", err)
		}
	}
	return fmt.Errorf("%w (--on-full %s)", err, f.onFull)
}
