//go:build unix

package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadNamedPipeWithoutWriter checks that Read of a named pipe that no
// process writes to returns at once, empty, instead of waiting in open
// for a writer that may never come.
func TestReadNamedPipeWithoutWriter(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "tokens")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := Read(fifo)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || len(r.data) != 0 {
			t.Errorf("Read(a named pipe without a writer) = %q, %v; want nothing and no error", r.data, r.err)
		}
	case <-time.After(ReadWait):
		// Unblock the open so that the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("Read(a named pipe without a writer) still waits after %v", ReadWait)
	}
}

// TestReadNamedPipeWriterNeverCloses checks that a writer that opens the
// pipe and never closes it makes Read fail after its wait, with ErrNoEnd,
// and that a writer that writes and closes is read whole.
func TestReadNamedPipeWriterNeverCloses(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "tokens")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A read-write open never blocks, and keeps a writer on the pipe.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	begin := time.Now()
	_, err = read(fifo, 200*time.Millisecond)
	var se *Error
	if !errors.Is(err, ErrNoEnd) || !errors.As(err, &se) || se.Path != fifo {
		t.Errorf("read(a pipe whose writer never closes) = %v, want ErrNoEnd in an *Error for the file", err)
	}
	if d := time.Since(begin); d > ReadWait {
		t.Errorf("read took %v, want about its wait, 200ms", d)
	}
}
