package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
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
	if code := errorCode(body); code != 0 {
		return code
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
