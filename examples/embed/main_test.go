package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

func get(t *testing.T, method, url, token, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestProgram builds the example, starts it, talks to the host's page and
// to the API mounted beside it over loopback, and stops it with SIGTERM.
func TestProgram(t *testing.T) {
	p := testkit.Start(t, testkit.Build(t, "."), testkit.Env("PLANTSTORE_ADDR=127.0.0.1:0"))
	tests := []struct {
		method, path, token, body string
		wantStatus                int
		wantBody                  string
	}{
		{"GET", "/", "", "", 200, "the host's own pages\n"},
		{"POST", "/api/plants", "alice-token", `{"id":1,"name":"Monstera"}`, 200, `{"name":"Monstera"}`},
		{"GET", "/api/plants", "alice-token", "", 200, `[{"id":1,"name":"Monstera"}]`},
		{"GET", "/api/plants", "mallory-token", "", 400, `{"error":401,"message":"invalid bearer token"}`},
		{"GET", "/api/nowhere", "alice-token", "", 400, `{"error":404,"message":"no such resource"}`},
		{"DELETE", "/", "", "", 405, "method not allowed\n"},
	}
	for _, tt := range tests {
		status, header, body := get(t, tt.method, p.URL+tt.path, tt.token, tt.body)
		if status != tt.wantStatus || body != tt.wantBody {
			t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, status, body, tt.wantStatus, tt.wantBody)
		}
		if strings.HasPrefix(tt.path, "/api/") && header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: the API's answer has no X-Request-Id", tt.method, tt.path)
		}
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("the example exited with %v after SIGTERM, want status 0\n%s", err, p.Stderr)
	}
}
