package main

import (
	"errors"
	"net/http"
	"os/exec"
	"regexp"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestProgram builds the example, starts it, creates and reads a plant
// over loopback, and stops it with SIGTERM.
func TestProgram(t *testing.T) {
	p := testkit.Start(t, testkit.Build(t, "."), testkit.Env("PLANTSTORE_ADDR=127.0.0.1:0", "PLANTSTORE_TOKENS=tok-1, tok-2"))
	tests := []struct {
		method, path, token, body string
		wantStatus                int
		wantBody                  string
	}{
		{"POST", "/plants", "tok-2", `{"id":3,"name":"Fern","tag":"outdoor"}`, 200, `{"name":"Fern","tag":"outdoor"}`},
		{"POST", "/plants", "tok-1", `{"id":3,"name":"Fern"}`, 400, `{"error":409,"message":"a plant with this id already exists"}`},
		{"GET", "/plants/3", "tok-1", "", 200, `{"id":3,"name":"Fern","tag":"outdoor"}`},
		{"GET", "/plants", "tok-3", "", 400, `{"error":401,"message":"invalid bearer token"}`},
	}
	for _, tt := range tests {
		send := func() (int, http.Header, []byte, error) {
			return testkit.Get(http.DefaultClient, p.URL+tt.path, tt.token)
		}
		if tt.method == "POST" {
			send = func() (int, http.Header, []byte, error) {
				return testkit.Post(t.Context(), http.DefaultClient, p.URL, tt.token, tt.body)
			}
		}
		status, _, b, err := send()
		if err != nil || status != tt.wantStatus || string(b) != tt.wantBody {
			t.Errorf("%s %s = %d %s, %v; want %d %s", tt.method, tt.path, status, b, err, tt.wantStatus, tt.wantBody)
		}
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("the example exited with %v after SIGTERM, want status 0\n%s", err, p.Stderr)
	}
}

// TestProgramNeedsTokens checks that the example refuses to start without
// PLANTSTORE_TOKENS and says so.
func TestProgramNeedsTokens(t *testing.T) {
	_, stderr, err := testkit.Run(t, testkit.Build(t, "."), testkit.Env("PLANTSTORE_ADDR=127.0.0.1:0"))
	if exit, ok := errors.AsType[*exec.ExitError](err); !ok || exit.ExitCode() != 1 {
		t.Errorf("without tokens: exit %v, want status 1", err)
	}
	// What the operator reads is the interface here: the log package's
	// date and time, then the message, on the only line.
	if !needsTokens.MatchString(stderr) {
		t.Errorf("without tokens: stderr %q, want the one line %q", stderr, needsTokens)
	}
}

var needsTokens = regexp.MustCompile(`\A\d{4}/\d\d/\d\d \d\d:\d\d:\d\d ` +
	regexp.QuoteMeta("set PLANTSTORE_TOKENS to the bearer tokens clients may send, comma-separated") + `\n\z`)
