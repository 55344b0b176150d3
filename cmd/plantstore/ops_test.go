package main

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/proctest"
)

// TestProcessConfiguredByEnvironment starts the built binary configured
// by variables alone, checks the request ids and JSON log lines of a few
// requests, and stops it with SIGTERM.
func TestProcessConfiguredByEnvironment(t *testing.T) {
	addr := freeAddr(t)
	p := proctest.Start(t, binary(t), proctest.Env(
		"PLANTSTORE_ADDR="+addr, "PLANTSTORE_DB=memory", "PLANTSTORE_TOKENS=env-token",
		"PLANTSTORE_LOG_FORMAT=json", "PLANTSTORE_CONVENTIONAL_STATUS=true"))
	if p.URL != "http://"+addr {
		t.Errorf("listening on %s, want PLANTSTORE_ADDR's %s", p.URL, addr)
	}

	send := func(method, path, requestID, body string) (int, string) {
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer env-token")
		req.Header.Set("Content-Type", "application/json")
		if requestID != "" {
			req.Header.Set("X-Request-Id", requestID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Request-Id")
	}
	if status, id := send("POST", "/plants", "proc-1", `{"id":1,"name":"Fern"}`); status != 200 || id != "proc-1" {
		t.Errorf("create = %d with X-Request-Id %q, want 200 and proc-1", status, id)
	}
	status, generated := send("POST", "/plants", strings.Repeat("x", 129), `{"id":1,"name":"Fern"}`)
	if status != http.StatusConflict || len(generated) != 32 {
		t.Errorf("conflict = %d with X-Request-Id %q, want 409 (PLANTSTORE_CONVENTIONAL_STATUS) and a generated id", status, generated)
	}
	if err := p.Stop(t); err != nil {
		t.Fatalf("plantstore exited with %v after SIGTERM, want status 0\n%s", err, p.Stderr)
	}

	ids := map[string]bool{}
	for _, l := range jsonLines(t, p.Stderr.String()) {
		if l["msg"] == "request" {
			ids[l["request_id"].(string)] = true
		}
	}
	if !ids["proc-1"] || !ids[generated] || len(ids) != 2 {
		t.Errorf("access lines name the ids %v, want proc-1 and %s", ids, generated)
	}
}

// TestProcessVersion checks -version against what go version -m reads
// from the same binary.
func TestProcessVersion(t *testing.T) {
	bin := binary(t)
	stdout, stderr, err := proctest.Run(t, bin, proctest.Env(), "-version")
	if err != nil {
		t.Fatalf("plantstore -version: %v\n%s", err, stderr)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			want = append(want, f[1]+" "+f[2]) // module path and version
		case len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision="):
			want = append(want, strings.TrimPrefix(f[1], "vcs.revision="))
		}
	}
	if len(want) == 0 {
		t.Fatalf("go version -m shows no module:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("-version printed %q, want it to hold %q", stdout, w)
		}
	}
}

// TestProcessUsageErrors checks the exit status and the message of a
// command line, or a variable, that cannot run.
func TestProcessUsageErrors(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantStatus int
		wantErr    string
	}{
		{"unknown flag", nil, []string{"-bogus"}, 2, "plantstore: flag provided but not defined: -bogus"},
		{"bad variable", []string{"PLANTSTORE_MAX_BODY=lots"}, nil, 1, "PLANTSTORE_MAX_BODY"},
		{"help", nil, []string{"-h"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := proctest.Run(t, bin, proctest.Env(tt.env...), tt.args...)
			status := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit status %d, stderr %q; want %d and %q", status, stderr, tt.wantStatus, tt.wantErr)
			}
		})
	}
}
