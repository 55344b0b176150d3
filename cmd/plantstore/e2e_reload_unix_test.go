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
	testkit.WriteFile(t, tokens, procToken+"\n")
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

// TestFailedReloadIsVisible revokes a token by rewriting the token file
// with a line no client can send: the reload keeps the old tokens, as a
// failed reload does, but says so where an operator looks: the error line
// names the file's refused line, and /metrics shows the tokens failing
// (the alert PlantstoreConfigReloadFailed reads it) until a good reload.
func TestFailedReloadIsVisible(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	testkit.WriteFile(t, tokens, procToken+"\nrevoked-soon\n")
	p := testkit.Start(t, binary(t), testkit.Env(), "-addr", "127.0.0.1:0", "-db", "memory", "-token-file", tokens)
	metric := func(series string) string {
		t.Helper()
		status, body := get(t, p.URL, "/metrics")
		if status != 200 {
			t.Fatalf("GET /metrics = %d", status)
		}
		for line := range strings.Lines(string(body)) {
			if rest, ok := strings.CutPrefix(line, series+" "); ok {
				return strings.TrimSpace(rest)
			}
		}
		return "(none)"
	}
	const ok, failures = `plantstore_config_last_reload_successful{what="tokens"}`, `plantstore_config_reload_failures_total{what="tokens"}`
	if got := metric(ok); got != "1" {
		t.Errorf("%s at start = %s, want 1", ok, got)
	}
	testkit.WriteFile(t, tokens, "# the tokens\n"+procToken+"\na token with spaces\n")
	hangUp(t, p, 1)
	if line := lastLine(p.Stderr.String(), "reload: kept the old tokens"); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, tokens+", line 3") {
		t.Errorf("logged %q, want an error naming %s, line 3", line, tokens)
	}
	if got, gotFailures := metric(ok), metric(failures); got != "0" || gotFailures != "1" {
		t.Errorf("after a failed reload: %s = %s, %s = %s; want 0 and 1", ok, got, failures, gotFailures)
	}
	testkit.WriteFile(t, tokens, procToken+"\n")
	hangUp(t, p, 2)
	if got, gotFailures := metric(ok), metric(failures); got != "1" || gotFailures != "1" {
		t.Errorf("after a good reload: %s = %s, %s = %s; want 1 and 1", ok, got, failures, gotFailures)
	}
}
