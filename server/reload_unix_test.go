//go:build unix

package server_test

import (
	"log/slog"
	"net/http"
	"syscall"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// TestSIGHUPReloads sends the test process SIGHUP, once before Serve and
// once while it serves: without WithReloadOn, the server catches it from
// Listen on and reloads once serving, instead of the process ending. It
// does not run in parallel: no other test must be serving, or not, when
// the signal comes.
func TestSIGHUPReloads(t *testing.T) {
	tokens := &fakeReload{}
	logs := &testkit.Buffer{}
	srv, err := server.Listen("127.0.0.1:0", server.WithLogger(testkit.NewLogger(logs, slog.LevelInfo)), server.WithReload("tokens", tokens.reload, nil))
	if err != nil {
		t.Fatal(err)
	}
	hangUp := func() {
		t.Helper()
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	hangUp()
	running := serveOn(t, srv, http.NotFoundHandler(), logs)
	testkit.WaitUntil(t, wait, "the reload of the SIGHUP sent before Serve", func() bool {
		return testkit.Logged(logs.String(), "configuration reloaded") == 1
	})
	hangUp()
	testkit.WaitUntil(t, wait, "the reload of the SIGHUP sent while serving", func() bool {
		return testkit.Logged(logs.String(), "configuration reloaded") == 2
	})
	if err := running.stop(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if tokens.calls != 2 {
		t.Errorf("the reload function was called %d times, want 2", tokens.calls)
	}
}
