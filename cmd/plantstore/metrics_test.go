package main

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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
// create, and reads /metrics: on the main listener by default, and on its
// own listener with -metrics-addr, the main one then answering 404. It
// checks that each source the binary registers is there (the API's, the
// storage's, plantstore_build_info, the Go and process collectors); what
// each series counts is promstats' tests'.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	for _, separate := range []bool{false, true} {
		name := "main listener"
		if separate {
			name = "metrics-addr"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "plants.db")}
			token := "tok"
			if separate {
				args = append(args, "-metrics-addr", "127.0.0.1:0")
				token = "" // its own listener needs none
			}
			url, stdout, _, _ := startRun(t, args, map[string]string{"PLANTSTORE_TOKENS": "tok"})
			metricsURL := url + "/metrics"
			if separate {
				metricsURL = servedAt(t, stdout.String(), "serving metrics on ")
			}
			if status, body := post(t, url, "tok", `{"id":1,"name":"Fern"}`); status != 200 {
				t.Fatalf("create = %d %s, want 200", status, body)
			}
			mfs := scrape(t, metricsURL, token)
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
			// On the main listener /metrics is a route of the API, behind its
			// token; with -metrics-addr it has no metrics to serve.
			if got, want := getCode(t, url+"/metrics", ""), map[bool]int{false: 401, true: 404}[separate]; got != want {
				t.Errorf("GET /metrics on the main listener without a token = %d, want error %d", got, want)
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

// TestMetricsExposure checks that -metrics-public opens /metrics on -addr
// to anyone, and nothing else, and that -metrics-public with
// -metrics-addr is a flag error. Without it, /metrics on -addr needs the
// token, and on -metrics-addr none: TestMetricsEndpoint's.
func TestMetricsExposure(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PLANTSTORE_TOKENS": "tok"}
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
