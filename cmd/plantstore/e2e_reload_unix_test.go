//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestReloadOfNamedPipeTokenFileDoesNotHang replaces the token file with
// a named pipe no process writes to and sends SIGHUP twice: each reload
// ends at once, keeping the old tokens and saying so, none is dropped,
// and SIGTERM then stops the process, where the reload used to wait in
// open for a writer and the process stayed alive after its last line.
func TestReloadOfNamedPipeTokenFileDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	writeFile(t, tokens, procToken+"\n")
	p := testkit.Start(t, binary(t), testkit.Env(), "-addr", "127.0.0.1:0", "-db", "memory", "-token-file", tokens)
	os.Remove(tokens)
	if err := syscall.Mkfifo(tokens, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Whatever happens, let a reader waiting in open go.
	t.Cleanup(func() {
		if w, err := os.OpenFile(tokens, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	for n := 1; n <= 2; n++ {
		if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testkit.WaitUntil(t, 20*time.Second, "the reload's line", func() bool {
			return logged(p.Stderr.String(), "configuration reloaded") == n
		})
	}
	logs := p.Stderr.String()
	if line := lastLine(logs, "reload: kept the old tokens"); !strings.Contains(line, "holds no token") {
		t.Errorf("logged %q, want the old tokens kept because the pipe held none", line)
	}
	if status, body := get(t, p.URL, "/plants"); status != 200 {
		t.Errorf("GET /plants with the old token = %d %s, want 200", status, body)
	}
	begin := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("plantstore still runs 20s after SIGTERM:\n%s", p.Stderr)
	}
	if err := p.Err(); err != nil {
		t.Errorf("plantstore exited with %v after %v, want status 0", err, time.Since(begin))
	}
}
