package main

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// A stallListener hands out connections whose writes fail once the client
// has stopped taking data for about stall: a client that sends requests
// but never reads the answers cannot hold a connection and its buffers
// forever.
//
// It stands in for http.Server.WriteTimeout, which re-arms the write
// deadline on every request: a timer update that costs more than creating
// the plant. A stallConn reads the clock on every write but moves its
// deadline forward at most once every stall/4, so a write blocked on the
// client fails after
// between 3/4 of stall and stall. An explicit write deadline, set with
// SetWriteDeadline or SetDeadline, replaces the bound until the zero time
// is set, as net/http does after every request.
type stallListener struct {
	net.Listener
	stall time.Duration
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, stall: l.stall, born: time.Now()}, nil
}

type stallConn struct {
	net.Conn
	stall time.Duration
	born  time.Time
	// renewAt is when, counted on the monotonic clock from born, the next
	// Write must move the deadline forward.
	renewAt atomic.Int64
	// explicit is set while a deadline set by the user is in force.
	explicit atomic.Bool
}

func (c *stallConn) Write(b []byte) (int, error) {
	if c.explicit.Load() {
		return c.Conn.Write(b)
	}
	now := time.Now()
	if since := int64(now.Sub(c.born)); since >= c.renewAt.Load() {
		if err := c.Conn.SetWriteDeadline(now.Add(c.stall)); err != nil {
			return 0, err
		}
		c.renewAt.Store(since + int64(c.stall/4))
	}
	return c.Conn.Write(b)
}

// SetWriteDeadline sets an explicit write deadline, or with the zero time
// goes back to the stall bound.
func (c *stallConn) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		if c.explicit.Swap(false) {
			c.renewAt.Store(0) // the next Write replaces the explicit deadline
		}
		return nil
	}
	c.explicit.Store(true)
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets the read deadline and the write deadline, as
// SetReadDeadline and SetWriteDeadline do.
func (c *stallConn) SetDeadline(t time.Time) error {
	return errors.Join(c.Conn.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// CloseWrite half-closes a TCP connection, as net/http does before it
// drops a connection whose request body it did not read, so that the
// client still gets the answer.
func (c *stallConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
