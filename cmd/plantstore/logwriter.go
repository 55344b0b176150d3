package main

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// logWriter buffers log lines and writes them to the log output from a
// goroutine of its own, every flushEvery or as soon as flushAt bytes wait,
// so that a busy server does not pay a write system call per request
// line, and so that serving never waits for the log output: while it
// does not take lines (a stderr pipe nobody reads), lines are kept up to
// maxBuffered bytes and the rest are dropped and counted. Once the output
// takes lines again, a warning says how many were dropped. It expects one
// whole line per Write, as slog's handlers make.
type logWriter struct {
	w io.Writer

	mu      sync.Mutex
	buf     []byte // lines waiting for the flusher
	dropped int64  // lines dropped since the flusher last reported
	// report, when set, is told how many lines were dropped, once the
	// output has taken a write after they were; see onDrop.
	report func(n int64)

	// droppedTotal counts every line dropped, for the metric.
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

func newLogWriter(w io.Writer) *logWriter {
	lw := &logWriter{w: w, buf: make([]byte, 0, flushAt),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.flushLoop()
	return lw
}

// Write keeps p for the flusher, or drops it when maxBuffered bytes are
// already waiting. It never blocks on the output and never fails.
func (lw *logWriter) Write(p []byte) (int, error) {
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

func (lw *logWriter) flushLoop() {
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
func (lw *logWriter) flush(spare []byte) []byte {
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

// onDrop makes lw call report with the number of lines it dropped, from
// its flushing goroutine, once the output has taken a write after they
// were dropped. report may log through lw.
func (lw *logWriter) onDrop(report func(n int64)) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.report = report
}

// droppedCounter returns the metric of the lines lw dropped.
func (lw *logWriter) droppedCounter() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "plantstore_log_lines_dropped_total",
		Help: "Log lines dropped because the log output (stderr) did not take them in time.",
	}, func() float64 { return float64(lw.droppedTotal.Load()) })
}

// Close writes what is buffered and stops the flushing goroutine. It waits
// at most closeWait for an output that does not take the lines. Closing
// again does nothing more.
func (lw *logWriter) Close() error {
	lw.stopOnce.Do(func() { close(lw.stop) })
	select {
	case <-lw.done:
	case <-time.After(closeWait):
	}
	return nil
}
