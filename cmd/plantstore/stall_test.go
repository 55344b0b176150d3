package main

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pipeConn returns a stallConn over one end of a pipe, and the other end.
func pipeConn(t *testing.T, stall time.Duration) (*stallConn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &stallConn{Conn: a, stall: stall, born: time.Now()}, b
}

// writeUnread writes to c, which nobody reads, and returns the error the
// write ends with, or fails t if it is still blocked after a minute.
func writeUnread(t *testing.T, c net.Conn) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("answer"))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("a write nobody reads is still blocked after a minute")
		return nil
	}
}

func TestStallConnBoundsUnreadWrites(t *testing.T) {
	c, peer := pipeConn(t, 100*time.Millisecond)
	// The peer reads the first answer only. The zero deadline net/http
	// sets after each request must not lift the bound for the second.
	go peer.Read(make([]byte, 64))
	if _, err := c.Write([]byte("answer")); err != nil {
		t.Fatalf("a write that is read failed: %v", err)
	}
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := writeUnread(t, c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a write nobody reads ended with %v, want %v", err, os.ErrDeadlineExceeded)
	}
}

func TestStallConnExplicitDeadline(t *testing.T) {
	c, peer := pipeConn(t, 100*time.Millisecond)
	// An explicit deadline replaces the stall bound: a write the peer
	// reads only after several times the bound goes through.
	if err := c.SetWriteDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		io.Copy(io.Discard, peer)
	}()
	if _, err := c.Write([]byte("answer")); err != nil {
		t.Fatalf("a write under an explicit deadline an hour away failed: %v", err)
	}

	// An explicit deadline in the past fails writes at once, and the zero
	// time brings the stall bound back.
	c, _ = pipeConn(t, 100*time.Millisecond)
	if err := c.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := writeUnread(t, c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a write past an explicit deadline ended with %v, want %v", err, os.ErrDeadlineExceeded)
	}
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := writeUnread(t, c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("after the zero deadline, a write nobody reads ended with %v, want %v", err, os.ErrDeadlineExceeded)
	}
}
