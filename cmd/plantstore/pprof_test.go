package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
)

// servedAt returns the URL a line of stdout beginning with prefix names.
func servedAt(t *testing.T, stdout, prefix string) string {
	t.Helper()
	for line := range strings.Lines(stdout) {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return u
		}
	}
	t.Fatalf("no line %q… in stdout:\n%s", prefix, stdout)
	return ""
}

// getCode returns the status of GET url with token, or the Error's code
// when the answer is an Error.
func getCode(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e struct{ Error int }
	if json.Unmarshal(body, &e) == nil && e.Error != 0 {
		return e.Error
	}
	return resp.StatusCode
}

// TestPprofOnlyOnMetricsListener checks that -pprof reaches the server:
// the profiles are served on -metrics-addr, without a token, and not on
// -addr. What WithPprof serves where is server's
// TestPprofOnlyOnMetricsListener.
func TestPprofOnlyOnMetricsListener(t *testing.T) {
	url, stdout, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-metrics-addr", "127.0.0.1:0", "-pprof"},
		map[string]string{"PLANTSTORE_TOKENS": "tok"})
	profiles := servedAt(t, stdout.String(), "serving profiles on ")
	if got := getCode(t, profiles+"cmdline", ""); !strings.HasSuffix(profiles, "/debug/pprof/") || got != 200 {
		t.Errorf("GET %scmdline on -metrics-addr = %d, want 200 at …/debug/pprof/", profiles, got)
	}
	if got := getCode(t, url+"/debug/pprof/cmdline", "tok"); got != 404 {
		t.Errorf("GET /debug/pprof/cmdline on -addr = %d, want error 404", got)
	}
}

// TestTLSAndPprofUsageErrors checks that a flag given without the one it
// needs stops the binary with status 2 and a message naming both, as a
// command line that does not parse does.
func TestTLSAndPprofUsageErrors(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantStderr string
	}{
		{"certificate without key", nil, []string{"-tls-cert", "cert.pem"},
			"plantstore: -tls-cert: needs -tls-key, the file of its private key; see plantstore -h\n"},
		{"key without certificate", []string{"PLANTSTORE_TLS_KEY=key.pem"}, nil,
			"plantstore: PLANTSTORE_TLS_KEY: needs -tls-cert, the file of its certificate; see plantstore -h\n"},
		{"pprof without metrics address", nil, []string{"-pprof"},
			"plantstore: -pprof: needs -metrics-addr: profiles are served there, never on -addr; see plantstore -h\n"},
		{"pprof from the environment", []string{"PLANTSTORE_PPROF=true"}, nil,
			"plantstore: PLANTSTORE_PPROF: needs -metrics-addr: profiles are served there, never on -addr; see plantstore -h\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := testkit.Run(t, bin, testkit.Env(tt.env...), append([]string{"-db", "memory"}, tt.args...)...)
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 {
				t.Errorf("exit: %v, want status 2", err)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
