package main

import (
	"errors"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestLoadsTheRealServer builds plantload and plantstore, starts the
// server, runs two small bounded loads against it over loopback, and
// checks what the server kept and what plantload reported.
func TestLoadsTheRealServer(t *testing.T) {
	t.Parallel()
	env := testkit.Env("PLANTSTORE_TOKENS=load-token")
	server := testkit.Start(t, testkit.Build(t, "github.com/plantstore/plantstore/cmd/plantstore"), env,
		"-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "warn")
	load := testkit.Build(t, ".")
	// report runs a load of ids 1000 to 1199 and checks the report's
	// fields that want names.
	report := func(what string, want map[string]string) {
		t.Helper()
		stdout, stderr, err := testkit.Run(t, load, env, "-url", server.URL, "-c", "4", "-n", "200", "-d", "0", "-start-id", "1000")
		if err != nil {
			t.Fatalf("plantload: %v\n%s", err, stderr)
		}
		got := fields(t, stdout)
		maps.DeleteFunc(got, func(k, _ string) bool { _, ok := want[k]; return !ok })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s report (-want +got):\n%s\n%s", what, diff, stdout)
		}
	}
	report("first run's", map[string]string{"requests": "200", "status 200": "200", "transport errors": "0"})
	// The same ids again: every create is a conflict.
	report("second run's", map[string]string{"requests": "200", "status 400": "200", "error code 409": "200", "transport errors": "0"})

	var wantIDs []int64
	for id := int64(1000); id < 1200; id++ {
		wantIDs = append(wantIDs, id)
	}
	if diff := cmp.Diff(wantIDs, slices.Sorted(maps.Keys(testkit.Plants(t, http.DefaultClient, server.URL, "load-token")))); diff != "" {
		t.Errorf("stored ids (-want +got):\n%s", diff)
	}

	if err := server.Stop(t); err != nil {
		t.Errorf("plantstore exited with %v after SIGTERM, want status 0\n%s", err, server.Stderr)
	}

	// A command line that cannot run exits 2.
	_, _, err := testkit.Run(t, load, env, "-c", "0")
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 {
		t.Errorf("plantload -c 0 exited with %v, want status 2", err)
	}
}

// TestReceivesTheServersWebhooks runs plantload as the webhook subscriber
// of a real server on SQLite, once answering at once and once down for
// the first moments, and checks that it counts every plant created as
// delivered once.
func TestReceivesTheServersWebhooks(t *testing.T) {
	t.Parallel()
	hook := testkit.FreeAddr(t)
	env := testkit.Env("PLANTSTORE_TOKENS=load-token", "PLANTSTORE_WEBHOOK_SECRET="+testkit.WebhookSecret)
	server := testkit.Start(t, testkit.Build(t, "github.com/plantstore/plantstore/cmd/plantstore"), env,
		"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "plants.db"), "-log-level", "warn",
		"-webhook", "http://"+hook+"/")
	load := testkit.Build(t, ".")
	for i, down := range []string{"0s", "300ms"} {
		args := []string{"-url", server.URL, "-c", "4", "-n", "300", "-d", "0", "-start-id", strconv.Itoa(1000 * (i + 1)),
			"-webhook-listen", hook, "-webhook-wait", "1m", "-webhook-down", down}
		stdout, stderr, err := testkit.Run(t, load, env, args...)
		if err != nil {
			t.Fatalf("plantload -webhook-down %s: %v\n%s\n%s", down, err, stdout, stderr)
		}
		got := fields(t, stdout)
		inLoad, _ := strconv.Atoi(got["webhooks in load"])
		backlog, _ := strconv.Atoi(got["webhook backlog"])
		if inLoad+backlog != 300 || got["webhook duplicates"] != "0" || strings.HasPrefix(got["webhook drain"], "not") {
			t.Errorf("-webhook-down %s: want 300 plants delivered once each, got report:\n%s", down, stdout)
		}
	}
}
