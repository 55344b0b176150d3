package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestProbe starts run with no token configured: it prints a token it
// generated, which creates, and serves the API's reference at /docs
// without a token (what the page holds is apidocs' tests'). Then it runs
// the binary's -probe against it, as a container's health check does, with
// the server's address given as a flag or, as in the image, in
// PLANTSTORE_ADDR. An answer other than 200 failing the probe is server's
// TestProbe; -probe /healthz over HTTPS, TestSIGHUPReloadsTheFiles'.
func TestProbe(t *testing.T) {
	t.Parallel()
	url, stdout, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory"}, nil)
	token := servedAt(t, stdout.String(), "Authorization: Bearer ")
	if status, body := post(t, url, token, `{"id":1,"name":"x"}`); len(token) < 32 || status != 200 {
		t.Errorf("create with the generated token %q = %d %s, want 200", token, status, body)
	}
	status, _, body, err := testkit.Get(http.DefaultClient, url+"/docs", "")
	if err != nil || status != 200 || !strings.Contains(string(body), "Plant Store API reference") {
		t.Errorf("GET /docs without a token = %d, %d bytes, %v; want the page", status, len(body), err)
	}
	addr := strings.TrimPrefix(url, "http://")
	_, port, _ := net.SplitHostPort(addr)
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()

	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantStdout string
		wantErr    bool
		reason     string
	}{
		{"ready", []string{"-probe", "/readyz", "-addr", addr}, nil,
			"GET " + url + `/readyz: 200 {"status":"ready"}` + "\n", false, ""},
		{"address from the environment", []string{"-probe", "/readyz"}, map[string]string{"PLANTSTORE_ADDR": "0.0.0.0:" + port},
			"GET " + url + `/readyz: 200 {"status":"ready"}` + "\n", false,
			"the image sets PLANTSTORE_ADDR=0.0.0.0:8080, and its health check runs in the same environment"},
		{"nothing listens", []string{"-probe", "/readyz", "-addr", closed}, nil, "", true, ""},
		{"not a path", []string{"-probe", "readyz", "-addr", addr}, nil, "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr testkit.Buffer
			err := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("run %q = %v, want an error: %v (%s)", tt.args, err, tt.wantErr, tt.reason)
			}
			if diff := cmp.Diff(tt.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
			if stderr.String() != "" {
				t.Errorf("stderr: %q, want nothing: a probe logs nothing", stderr.String())
			}
		})
	}
}
