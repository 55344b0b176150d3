package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/proctest"
)

// TestLoadsTheRealServer builds plantload and plantstore, starts the
// server, runs two small bounded loads against it over loopback, and
// checks what the server kept and what plantload reported.
func TestLoadsTheRealServer(t *testing.T) {
	env := proctest.Env("PLANTSTORE_TOKENS=load-token")
	server := proctest.Start(t, proctest.Build(t, "github.com/plantstore/plantstore/cmd/plantstore"), env,
		"-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "warn")
	load := proctest.Build(t, ".")
	args := []string{"-url", server.URL, "-c", "4", "-n", "200", "-d", "0", "-start-id", "1000"}

	stdout, stderr, err := proctest.Run(t, load, env, args...)
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
	stdout, stderr, err = proctest.Run(t, load, env, args...)
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
	_, _, err = proctest.Run(t, load, env, "-c", "0")
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 {
		t.Errorf("plantload -c 0 exited with %v, want status 2", err)
	}
}
