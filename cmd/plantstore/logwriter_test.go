package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
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

func TestLogWriterDropsInsteadOfBlocking(t *testing.T) {
	t.Parallel()
	out := &stuckWriter{release: make(chan struct{})}
	lw := newLogWriter(out)
	var reported atomic.Int64
	lw.onDrop(func(n int64) {
		reported.Add(n)
		fmt.Fprintf(lw, "dropped=%d\n", n)
	})
	t.Cleanup(func() { lw.Close() })

	line := strings.Repeat("x", 99) + "\n"
	const n = 3 * maxBuffered / 100 // three times what may wait
	for i := range n {
		// Each Write returns though nothing reaches the output: a stuck
		// Write would hang the test here.
		if _, err := lw.Write([]byte(line)); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
	dropped := lw.droppedTotal.Load()
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
