//go:build unix

package httpapi_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTokenFileReloadOfNamedPipeWithoutWriter checks that reloading a
// token file that has become a named pipe no process writes to fails at
// once, keeping the tokens in use, instead of waiting in open for a
// writer: that wait hung the reload, and the shutdown that waits for it.
func TestTokenFileReloadOfNamedPipeWithoutWriter(t *testing.T) {
	t.Parallel()
	tf, file := openTokenFile(t, "old-token\n")
	os.Remove(file)
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tf.Reload()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "holds no token") {
			t.Errorf("Reload of a named pipe without a writer = %v, want an error saying it holds no token", err)
		}
	case <-time.After(10 * time.Second):
		// Let the open that waits end, so that the test can.
		if w, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("Reload of a named pipe without a writer waited for one")
	}
	if got := accepted(tf, "old-token"); !got["old-token"] {
		t.Error("the old token is no longer accepted after a failed reload")
	}
}
