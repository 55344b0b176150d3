package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// stuckWriter takes no write until released, like a stderr pipe nobody
// reads, then keeps what it is given.
type stuckWriter struct {
	release chan struct{}
	mu      sync.Mutex
	b       bytes.Buffer
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *stuckWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogWriterDropsInsteadOfBlocking writes three times what a LogWriter
// keeps to an output that takes nothing: every Write returns at once, the
// lines past the bound are dropped and counted, and once the output takes
// lines again the report says how many, and nothing else is lost.
func TestLogWriterDropsInsteadOfBlocking(t *testing.T) {
	t.Parallel()
	out := &stuckWriter{release: make(chan struct{})}
	lw := server.NewLogWriter(out)
	var reported atomic.Int64
	lw.OnDrop(func(n int64) {
		reported.Add(n)
		fmt.Fprintf(lw, "dropped=%d\n", n)
	})
	t.Cleanup(func() { lw.Close() })

	line := strings.Repeat("x", 99) + "\n"
	const n = 3 * server.MaxBuffered / 100 // three times what may wait
	for i := range n {
		// Each Write returns though nothing reaches the output: a stuck
		// Write would hang the test here.
		if _, err := lw.Write([]byte(line)); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
	dropped := lw.Dropped()
	if dropped == 0 {
		t.Fatalf("%d lines written to a stuck output, none dropped", n)
	}
	if reported.Load() != 0 {
		t.Errorf("drops reported before the output moved")
	}

	close(out.release)
	testkit.WaitUntil(t, 10*time.Second, fmt.Sprintf("%d dropped lines to be reported", dropped), func() bool {
		return reported.Load() == dropped
	})
	lw.Close()
	got := out.String()
	if kept := int64(strings.Count(got, line)); kept+dropped != n {
		t.Errorf("output has %d lines and %d were dropped, want %d in all", kept, dropped, n)
	}
	// The drops may be reported in more than one line, one per flush
	// that found some.
	var inOutput int64
	for l := range strings.Lines(got) {
		var n int64
		if _, err := fmt.Sscanf(l, "dropped=%d\n", &n); err == nil {
			inOutput += n
		}
	}
	if inOutput != dropped {
		t.Errorf("output reports %d dropped lines, want %d", inOutput, dropped)
	}
}

// failingWriter refuses every write.
type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, errors.New("output gone") }

// TestLogWriterCountsRefusedLines checks that lines the output refuses
// with an error are counted as dropped and reported.
func TestLogWriterCountsRefusedLines(t *testing.T) {
	t.Parallel()
	lw := server.NewLogWriter(failingWriter{})
	var reported atomic.Int64
	lw.OnDrop(func(n int64) { reported.Add(n) })
	for range 3 {
		fmt.Fprintln(lw, "a line")
	}
	lw.Close()
	if got := lw.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want the 3 lines the output refused", got)
	}
	if got := reported.Load(); got != 3 {
		t.Errorf("reported %d dropped lines, want 3", got)
	}
}
