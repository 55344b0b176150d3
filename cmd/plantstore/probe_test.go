package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestProbe runs the binary's -probe against a server run started, as a
// container's health check does, with the server's address given as a
// flag or, as in the image, in PLANTSTORE_ADDR. An answer other than 200
// failing the probe is server's TestProbe; -probe /healthz over HTTPS,
// TestSIGHUPReloadsTheFiles'.
func TestProbe(t *testing.T) {
	t.Parallel()
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory"}, nil)
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
