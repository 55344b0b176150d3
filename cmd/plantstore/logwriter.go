package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logWriter buffers log lines and flushes them every flushEvery, when the
// buffer fills, and on Close, so that a busy server does not pay a write
// system call per request line.
type logWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

const flushEvery = 100 * time.Millisecond

func newLogWriter(w io.Writer) *logWriter {
	lw := &logWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go lw.flushLoop()
	return lw
}

func (lw *logWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

func (lw *logWriter) flushLoop() {
	defer close(lw.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			lw.mu.Lock()
			lw.w.Flush()
			lw.mu.Unlock()
		case <-lw.stop:
			return
		}
	}
}

// Close flushes what is buffered and stops the flushing goroutine.
func (lw *logWriter) Close() error {
	close(lw.stop)
	<-lw.done
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Flush()
}
