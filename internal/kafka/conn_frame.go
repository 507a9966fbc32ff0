package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"time"
)

// frameReader reads a connection's request frames off the socket: a 4-byte size, then
// the frame. Only the connection's reader uses it.
type frameReader struct {
	c       *conn
	br      *bufio.Reader
	sizeBuf [4]byte
}

// newFrameReader starts the connection's first idle period (connections.max.idle.ms).
func newFrameReader(c *conn) *frameReader {
	if c.idle > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.idle))
	}
	return &frameReader{c: c, br: bufio.NewReaderSize(c.nc, 64<<10)}
}

// size reads the next frame's size prefix.
func (fr *frameReader) size() (int32, error) {
	if err := fr.c.readFull(fr.br, fr.sizeBuf[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(fr.sizeBuf[:])), nil
}

// frame reads the size bytes of the frame whose prefix size read, into a pool buffer.
func (fr *frameReader) frame(size int32) ([]byte, error) {
	frame := getBuf(int(size))[:size]
	if err := fr.c.readFull(fr.br, frame); err != nil {
		return nil, err
	}
	fr.c.s.metrics.bytesIn.Add(float64(size + 4))
	return frame, nil
}

// readFull fills b. The read deadline is set once per idle period, not per read: when
// it passes, the connection is closed if it was idle (renewIdle), and otherwise given
// another period.
func (c *conn) readFull(br *bufio.Reader, b []byte) error {
	for {
		n, err := io.ReadFull(br, b)
		if err == nil || c.idle <= 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		b = b[n:]
		if !c.renewIdle(n > 0) {
			return errIdle
		}
	}
}
