package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
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
	args := []string{"-url", server.URL, "-c", "4", "-n", "200", "-d", "0", "-start-id", "1000"}

	stdout, stderr, err := testkit.Run(t, load, env, args...)
	if err != nil {
		t.Fatalf("plantload: %v\n%s", err, stderr)
	}
	got := fields(t, stdout)
	want := map[string]string{"requests": "200", "status 200": "200", "transport errors": "0"}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first run's report (-want +got):\n%s\n%s", diff, stdout)
	}

	// The same ids again: every create is a conflict.
	stdout, stderr, err = testkit.Run(t, load, env, args...)
	if err != nil {
		t.Fatalf("plantload: %v\n%s", err, stderr)
	}
	got = fields(t, stdout)
	want = map[string]string{"requests": "200", "status 400": "200", "error code 409": "200", "transport errors": "0"}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second run's report (-want +got):\n%s\n%s", diff, stdout)
	}

	req, _ := http.NewRequest("GET", server.URL+"/plants?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer load-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var plants []struct{ ID int64 }
	err = json.NewDecoder(resp.Body).Decode(&plants)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ids, wantIDs []int64
	for _, p := range plants {
		ids = append(ids, p.ID)
	}
	for id := int64(1000); id < 1200; id++ {
		wantIDs = append(wantIDs, id)
	}
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("stored ids (-want +got):\n%s", diff)
	}

	if err := server.Stop(t); err != nil {
		t.Errorf("plantstore exited with %v after SIGTERM, want status 0\n%s", err, server.Stderr)
	}

	// A command line that cannot run exits 2.
	_, _, err = testkit.Run(t, load, env, "-c", "0")
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hook := l.Addr().String()
	l.Close()
	env := testkit.Env("PLANTSTORE_TOKENS=load-token", "PLANTSTORE_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
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
