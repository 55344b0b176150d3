package server

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// A LogWriter buffers log lines and writes them to its output from a
// goroutine of its own, every 100 ms or as soon as 64 KiB wait, so that a
// busy server does not pay a write system call per access line, and so
// that serving never waits for the log output: while the output takes no
// lines (a stderr pipe nobody reads), lines are kept up to 1 MiB and the
// rest are dropped and counted (TestLogWriterDropsInsteadOfBlocking).
// Once the output takes lines again, the function of [LogWriter.OnDrop]
// is told how many were dropped. It expects one whole line per Write, as
// slog's handlers make: give it to slog.NewTextHandler or
// slog.NewJSONHandler, and to the handler's access log.
type LogWriter struct {
	w io.Writer

	mu      sync.Mutex
	buf     []byte // lines waiting for the flusher
	dropped int64  // lines dropped since the flusher last reported
	// report, when set, is told how many lines were dropped, once the
	// output has taken a write after they were; see OnDrop.
	report func(n int64)

	// droppedTotal counts every line dropped, for Dropped.
	droppedTotal atomic.Int64

	kick     chan struct{} // tells the flusher that flushAt bytes wait
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

const (
	flushEvery  = 100 * time.Millisecond
	flushAt     = 64 << 10
	maxBuffered = 1 << 20
	// closeWait bounds how long Close waits for the output to take the
	// last lines, so that a stuck stderr cannot keep the process from
	// exiting.
	closeWait = 2 * time.Second
)

// NewLogWriter returns a LogWriter writing to w, and starts its
// goroutine; [LogWriter.Close] stops it.
func NewLogWriter(w io.Writer) *LogWriter {
	lw := &LogWriter{w: w, buf: make([]byte, 0, flushAt),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.flushLoop()
	return lw
}

// Write keeps p for the flusher, or drops it when 1 MiB is already
// waiting. It never blocks on the output and never fails.
func (lw *LogWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	if len(lw.buf)+len(p) > maxBuffered {
		lw.dropped++
		lw.mu.Unlock()
		lw.droppedTotal.Add(1)
		return len(p), nil
	}
	lw.buf = append(lw.buf, p...)
	full := len(lw.buf) >= flushAt
	lw.mu.Unlock()
	if full {
		select {
		case lw.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (lw *LogWriter) flushLoop() {
	defer close(lw.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	var spare []byte
	for {
		select {
		case <-t.C:
		case <-lw.kick:
		case <-lw.stop:
			// Twice: the first may report drops in a line of its own.
			lw.flush(lw.flush(spare))
			return
		}
		spare = lw.flush(spare)
	}
}

// flush writes the lines waiting, swapping in spare to take the next
// ones, and returns the buffer it wrote for the next call to swap in.
// The lock is not held while the output writes.
func (lw *LogWriter) flush(spare []byte) []byte {
	lw.mu.Lock()
	b := lw.buf
	lw.buf = spare[:0]
	dropped := lw.dropped
	lw.dropped = 0
	report := lw.report
	lw.mu.Unlock()
	if len(b) > 0 {
		if _, err := lw.w.Write(b); err != nil {
			lost := int64(bytes.Count(b, []byte{'\n'}))
			lw.droppedTotal.Add(lost)
			dropped += lost
		}
	}
	if dropped > 0 {
		if report != nil {
			report(dropped)
		} else {
			lw.mu.Lock()
			lw.dropped += dropped
			lw.mu.Unlock()
		}
	}
	return b
}

// OnDrop makes lw call report with the number of lines it dropped, from
// its flushing goroutine, once the output has taken a write after they
// were dropped; lines the output refused with an error count as dropped
// too. report may log through lw, as the plantstore binary does:
// "log lines dropped: the log output did not take them in time".
func (lw *LogWriter) OnDrop(report func(n int64)) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.report = report
}

// Dropped returns how many lines lw has dropped since [NewLogWriter], for
// a metric (package promstats has one).
func (lw *LogWriter) Dropped() int64 { return lw.droppedTotal.Load() }

// Close writes what is buffered and stops the flushing goroutine. It waits
// at most 2 seconds for an output that does not take the lines. Closing
// again does nothing more. Lines written after Close are kept and never
// written.
func (lw *LogWriter) Close() error {
	lw.stopOnce.Do(func() { close(lw.stop) })
	select {
	case <-lw.done:
	case <-time.After(closeWait):
	}
	return nil
}
