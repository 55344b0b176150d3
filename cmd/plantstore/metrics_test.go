package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/testkit"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches url, with token when it is not "", and parses it as the
// Prometheus text format.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s = %d %s, want 200", url, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
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
// create, a conflicting one and one with a wrong token, and reads the
// series they made from /metrics: on the main listener by default, and on
// its own listener with -metrics-addr, the main one then answering 404.
//
// It is one piece: the scrapes check what the requests before them did, on one process.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	for _, separate := range []bool{false, true} {
		name := "main listener"
		if separate {
			name = "metrics-addr"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "plants.db")}
			if separate {
				args = append(args, "-metrics-addr", "127.0.0.1:0")
			}
			url, stdout, _, _ := startRun(t, args, map[string]string{"PLANTSTORE_TOKENS": "tok"})
			metricsURL := url + "/metrics"
			if separate {
				metricsURL = ""
				for _, line := range strings.Split(stdout.String(), "\n") {
					if u, ok := strings.CutPrefix(line, "serving metrics on "); ok {
						metricsURL = u
					}
				}
				if metricsURL == "" || strings.HasPrefix(metricsURL, url) {
					t.Fatalf("no metrics listener of its own printed:\n%s", stdout)
				}
			}

			if status, body := post(t, url, "tok", `{"id":1,"name":"Fern"}`); status != 200 {
				t.Fatalf("create = %d %s, want 200", status, body)
			}
			if status, body := post(t, url, "tok", `{"id":1,"name":"Fern"}`); !strings.Contains(body, `"error":409`) {
				t.Fatalf("conflicting create = %d %s, want error 409", status, body)
			}
			if status, body := post(t, url, "wrong", `{"id":2,"name":"Aloe"}`); !strings.Contains(body, `"error":401`) {
				t.Fatalf("create with a wrong token = %d %s, want error 401", status, body)
			}

			token := "tok"
			if separate {
				token = "" // its own listener needs none
			}
			mfs := scrape(t, metricsURL, token)
			values := map[string]float64{}
			counter := func(key, name string, labels map[string]string) {
				t.Helper()
				if m := find(t, mfs, name, labels); m != nil {
					values[key] = m.GetCounter().GetValue()
				}
			}
			histogram := func(key, name string, labels map[string]string) {
				t.Helper()
				if m := find(t, mfs, name, labels); m != nil {
					values[key+" count"] = float64(m.GetHistogram().GetSampleCount())
					values[key+" sum"] = m.GetHistogram().GetSampleSum()
				}
			}
			postPlants := map[string]string{"route": "/plants", "method": "POST"}
			counter("200", "plantstore_http_requests_total", map[string]string{"route": "/plants", "method": "POST", "error": ""})
			counter("409", "plantstore_http_requests_total", map[string]string{"route": "/plants", "method": "POST", "error": "409"})
			counter("401", "plantstore_http_requests_total", map[string]string{"route": "/plants", "method": "POST", "error": "401"})
			histogram("http", "plantstore_http_request_duration_seconds", postPlants)
			// The 401 never reached the storage; the 409 did, and is not
			// a storage failure.
			histogram("create", "plantstore_storage_operation_duration_seconds", map[string]string{"operation": "create"})
			histogram("batch", "plantstore_storage_group_commit_batch_size", nil)
			counter("create errors", "plantstore_storage_errors_total", map[string]string{"operation": "create", "kind": "other"})
			if m := find(t, mfs, "plantstore_build_info", map[string]string{"goversion": runtime.Version()}); m != nil {
				values["build"] = m.GetGauge().GetValue()
				for _, l := range []string{"version", "revision"} {
					if !strings.Contains(m.String(), `name:"`+l+`"`) {
						t.Errorf("plantstore_build_info lacks the label %s: %v", l, m)
					}
				}
			}
			// The sums of durations vary; only their counts are compared.
			delete(values, "http sum")
			delete(values, "create sum")
			want := map[string]float64{
				"200": 1, "409": 1, "401": 1,
				"http count": 3, "create count": 2, "create errors": 0,
				"batch count": 2, "batch sum": 2,
				"build": 1,
			}
			if diff := cmp.Diff(want, values); diff != "" {
				t.Errorf("series after a 200, a 409 and a 401 (-want +got):\n%s", diff)
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

			// On the main listener /metrics is a route of the API, behind its
			// token; with -metrics-addr it has no metrics to serve.
			resp, err := http.Get(url + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Error int }
			err = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if want := map[bool]int{false: http.StatusUnauthorized, true: http.StatusNotFound}[separate]; err != nil || e.Error != want {
				t.Errorf("GET /metrics on the main listener without a token: error %d (%v), want %d", e.Error, err, want)
			}
			mfs = scrape(t, metricsURL, token)
			if m := find(t, mfs, "plantstore_http_request_duration_seconds", postPlants); m != nil && m.GetHistogram().GetSampleCount() != 3 {
				t.Errorf("POST /plants requests = %d after scrapes, want still 3", m.GetHistogram().GetSampleCount())
			}
			if separate {
				if m := find(t, mfs, "plantstore_http_requests_total", map[string]string{"route": "/metrics", "error": "404"}); m != nil && m.GetCounter().GetValue() != 1 {
					t.Errorf("requests to the main listener's /metrics = %v, want 1", m.GetCounter().GetValue())
				}
			} else if m := find(t, mfs, "plantstore_http_requests_total", map[string]string{"route": "/metrics", "error": "401"}); m != nil && m.GetCounter().GetValue() != 1 {
				t.Errorf("scrapes without a token = %v, want 1", m.GetCounter().GetValue())
			}
		})
	}
}

// TestWebhookMetricsEndpoint runs the binary with a webhook subscriber and
// reads the delivery metrics off its /metrics: the delivery of one create
// is counted, and the outbox is empty once it is done.
func TestWebhookMetricsEndpoint(t *testing.T) {
	t.Parallel()
	received := make(chan struct{}, 10)
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- struct{}{}
	}))
	t.Cleanup(sub.Close)
	path := filepath.Join(t.TempDir(), "plants.db")
	args := []string{"-addr", "127.0.0.1:0", "-db", path, "-webhook", sub.URL}
	url, _, _, _ := startRun(t, args, map[string]string{
		"PLANTSTORE_TOKENS":         "tok",
		"PLANTSTORE_WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of thirty-two bytes....")),
	})
	if status, body := post(t, url, "tok", `{"id":1,"name":"Fern"}`); status != 200 {
		t.Fatalf("create = %d %s, want 200", status, body)
	}
	<-received
	// The gauge counts the outbox at most once every 5 s, so the first
	// scrape waits until the delivery's ack has emptied it.
	db := openSQLiteFile(t, path)
	testkit.WaitUntil(t, 10*time.Second, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	var delivered, depth float64
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: plantstore_webhook_deliveries_total %v, plantstore_webhook_outbox_depth %v", delivered, depth)
		}
	})
	testkit.WaitUntil(t, 10*time.Second, "plantstore_webhook_deliveries_total 1 and plantstore_webhook_outbox_depth 0 after one delivery", func() bool {
		mfs := scrape(t, url+"/metrics", "tok")
		delivered = find(t, mfs, "plantstore_webhook_deliveries_total", nil).GetCounter().GetValue()
		depth = find(t, mfs, "plantstore_webhook_outbox_depth", nil).GetGauge().GetValue()
		return delivered == 1 && depth == 0
	})
}

// TestMetricsExposure checks who may read /metrics: on -addr, only with a
// token, unless -metrics-public; on -metrics-addr, anyone who can reach
// that listener; and -metrics-public with -metrics-addr is a flag error.
func TestMetricsExposure(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PLANTSTORE_TOKENS": "tok"}
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory"}, env)
	if got := getCode(t, url+"/metrics", ""); got != 401 {
		t.Errorf("GET /metrics on -addr without a token = %d, want error 401", got)
	}
	if got := getCode(t, url+"/metrics", "tok"); got != 200 {
		t.Errorf("GET /metrics on -addr with the token = %d, want 200", got)
	}
	public, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-metrics-public"}, env)
	if got := getCode(t, public+"/metrics", ""); got != 200 {
		t.Errorf("GET /metrics on -addr without a token, -metrics-public = %d, want 200", got)
	}
	if got := getCode(t, public+"/plants", ""); got != 401 {
		t.Errorf("GET /plants without a token, -metrics-public = %d, want error 401", got)
	}
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-db", "memory", "-metrics-public", "-metrics-addr", "127.0.0.1:0"},
		func(k string) string { return env[k] }, io.Discard, io.Discard)
	if fe, ok := errors.AsType[*flagError](err); !ok || fe.Flag != "metrics-public" {
		t.Errorf("run with -metrics-public and -metrics-addr = %v, want a *flagError for -metrics-public", err)
	}
}
