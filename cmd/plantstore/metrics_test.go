package main

import (
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
	dto "github.com/prometheus/client_model/go"
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
	status, _, body, err := testkit.Get(http.DefaultClient, url, token)
	if err != nil {
		t.Fatal(err)
	}
	if code := testkit.ErrorCode(body); code != 0 {
		return code
	}
	return status
}

// find returns the series of family name whose labels include labels.
func find(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Errorf("no family %s", name)
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if hv, ok := have[k]; !ok || hv != v {
				continue next
			}
		}
		return m
	}
	t.Errorf("no series %s%v", name, labels)
	return nil
}

// TestMetricsEndpoint starts the binary's run on a SQLite file, sends a
// create, and reads /metrics: on the main listener behind the API's token
// by default, to anyone with -metrics-public, which opens nothing else,
// and on its own listener without a token with -metrics-addr, the main
// one then answering 404. It checks that each source the binary registers
// is there (the API's, the storage's, plantstore_build_info, the Go and
// process collectors); what each series counts is promstats' tests'. With
// -metrics-addr, -pprof reaches the server: the profiles are served there,
// without a token, and not on -addr; what WithPprof serves where is
// server's TestPprofOnlyOnMetricsListener.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		args  []string
		token string // what /metrics needs
		main  int    // GET /metrics on the main listener without a token: the status, or the Error's code
	}{
		{"main listener", nil, "tok", 401},
		{"metrics-public", []string{"-metrics-public"}, "", 200},
		{"metrics-addr", []string{"-metrics-addr", "127.0.0.1:0", "-pprof"}, "", 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "plants.db")}, tt.args...)
			url, stdout, _, _ := startRun(t, args, map[string]string{"PLANTSTORE_TOKENS": "tok"})
			metricsURL := url + "/metrics"
			if tt.name == "metrics-addr" {
				metricsURL = servedAt(t, stdout.String(), "serving metrics on ")
				profiles := servedAt(t, stdout.String(), "serving profiles on ")
				if got := getCode(t, profiles+"cmdline", ""); !strings.HasSuffix(profiles, "/debug/pprof/") || got != 200 {
					t.Errorf("GET %scmdline on -metrics-addr = %d, want 200 at …/debug/pprof/", profiles, got)
				}
				if got := getCode(t, url+"/debug/pprof/cmdline", "tok"); got != 404 {
					t.Errorf("GET /debug/pprof/cmdline on -addr = %d, want error 404", got)
				}
			}
			if status, body := post(t, url, "tok", `{"id":1,"name":"Fern"}`); status != 200 {
				t.Fatalf("create = %d %s, want 200", status, body)
			}
			mfs := testkit.Scrape(t, http.DefaultClient, metricsURL, tt.token)
			find(t, mfs, "plantstore_http_requests_total", map[string]string{"route": "/plants", "method": "POST", "error": ""})
			find(t, mfs, "plantstore_storage_operation_duration_seconds", map[string]string{"operation": "create"})
			if m := find(t, mfs, "plantstore_build_info", map[string]string{"goversion": runtime.Version()}); m != nil && m.GetGauge().GetValue() != 1 {
				t.Errorf("plantstore_build_info = %v, want 1", m.GetGauge().GetValue())
			}
			for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
				if _, ok := mfs[name]; !ok {
					t.Errorf("no family %s", name)
				}
			}
			for name := range mfs {
				if strings.Contains(name, "plant") && !strings.HasPrefix(name, "plantstore_") {
					t.Errorf("family %s lacks the plantstore_ prefix", name)
				}
			}
			if got := getCode(t, url+"/metrics", ""); got != tt.main {
				t.Errorf("GET /metrics on the main listener without a token = %d, want %d", got, tt.main)
			}
			if got := getCode(t, url+"/plants", ""); got != 401 {
				t.Errorf("GET /plants without a token = %d, want error 401", got)
			}
		})
	}
}
