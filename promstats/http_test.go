package promstats_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/promstats"
)

// series gathers reg and returns the value of every counter and gauge, and
// the sample count of every histogram (as name_count), keyed by the series'
// name and labels in the exposition format, labels sorted.
func series(t *testing.T, reg prometheus.Gatherer, prefix string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[seriesKey(mf.GetName(), m)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[seriesKey(mf.GetName(), m)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[seriesKey(mf.GetName()+"_count", m)] = float64(m.GetHistogram().GetSampleCount())
			default:
				t.Errorf("%s: unexpected type %v", mf.GetName(), mf.GetType())
			}
		}
	}
	return got
}

func seriesKey(name string, m *dto.Metric) string {
	var labels []string
	for _, lp := range m.GetLabel() {
		labels = append(labels, lp.GetName()+`="`+lp.GetValue()+`"`)
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// zeroSeries are the series HTTP's hooks export before any request: one
// success counter and one histogram per route and method a handler serves.
func zeroSeries() map[string]float64 {
	want := map[string]float64{}
	for _, rm := range [][2]string{
		{"GET", "/healthz"}, {"GET", "/openapi.json"}, {"GET", "/plants"}, {"POST", "/plants"},
		{"DELETE", "/plants/{id}"}, {"GET", "/plants/{id}"}, {"GET", "/readyz"}, {"GET", "/metrics"},
		{"GET", "/docs"}, {"GET", "/docs/{name}"},
	} {
		want[`plantstore_http_requests_total{error="",method="`+rm[0]+`",route="`+rm[1]+`"}`] = 0
		want[`plantstore_http_request_duration_seconds_count{method="`+rm[0]+`",route="`+rm[1]+`"}`] = 0
	}
	return want
}

const testToken = "promstats-test-token"

// hooks returns HTTP's hooks over reg, as an option.
func hooks(t *testing.T, reg prometheus.Registerer) httpapi.Option {
	t.Helper()
	h, err := promstats.HTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	return httpapi.WithHooks(h)
}

// TestHTTP sends requests of every outcome and checks the series they
// make. That the hooks hear the same codes beside an access log is
// httpapi's TestHooks.
func TestHTTP(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := httpapi.New(plantstore.New(memstore.New()), hooks(t, reg), httpapi.WithTokens(testToken),
		httpapi.WithLogger(slog.New(slog.DiscardHandler)))
	if diff := cmp.Diff(zeroSeries(), series(t, reg, "plantstore_http_")); diff != "" {
		t.Errorf("series before any request (-want +got):\n%s", diff)
	}

	// send serves a request with the test token and a JSON
	// Content-Type, which headers replace, or remove when empty.
	send := func(method, path string, headers map[string]string, body string, wantStatus int) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
			if v == "" {
				req.Header.Del(k)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != wantStatus {
			t.Fatalf("%s %s = %d %s, want %d", method, path, rec.Code, rec.Body, wantStatus)
		}
	}
	send("POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 200)
	send("POST", "/plants", nil, `{"id":2,"name":"Aloe"}`, 200)
	send("POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 400)                                  // 409
	send("POST", "/plants", map[string]string{"Authorization": "Bearer wrong"}, `{"id":3}`, 400) // 401
	send("POST", "/plants", map[string]string{"Content-Type": "text/plain"}, `{}`, 400)          // 415
	send("GET", "/plants/1", nil, "", 200)
	send("GET", "/plants/01", nil, "", 400)              // 400, a non-canonical id
	send("DELETE", "/plants/2", nil, "", 204)            // a success without a body
	send("DELETE", "/plants/2", nil, "", 400)            // 404
	send("GET", "/plants/1/leaves", nil, "", 400)        // 404, no such route
	send("GET", "/secret-admin-path-"+"x", nil, "", 400) // 404, no such route
	send("PUT", "/plants", nil, "", 400)                 // 405
	send("BREW", "/plants", nil, "", 400)                // 405, a method HTTP does not define
	send("GET", "/healthz", map[string]string{"Authorization": ""}, "", 200)

	want := zeroSeries()
	for k, v := range map[string]float64{
		`plantstore_http_requests_total{error="",method="POST",route="/plants"}`:               2,
		`plantstore_http_requests_total{error="409",method="POST",route="/plants"}`:            1,
		`plantstore_http_requests_total{error="401",method="POST",route="/plants"}`:            1,
		`plantstore_http_requests_total{error="415",method="POST",route="/plants"}`:            1,
		`plantstore_http_request_duration_seconds_count{method="POST",route="/plants"}`:        5,
		`plantstore_http_requests_total{error="",method="GET",route="/plants/{id}"}`:           1,
		`plantstore_http_requests_total{error="400",method="GET",route="/plants/{id}"}`:        1,
		`plantstore_http_request_duration_seconds_count{method="GET",route="/plants/{id}"}`:    2,
		`plantstore_http_requests_total{error="",method="DELETE",route="/plants/{id}"}`:        1,
		`plantstore_http_requests_total{error="404",method="DELETE",route="/plants/{id}"}`:     1,
		`plantstore_http_request_duration_seconds_count{method="DELETE",route="/plants/{id}"}`: 2,
		`plantstore_http_requests_total{error="404",method="GET",route="other"}`:               2,
		`plantstore_http_request_duration_seconds_count{method="GET",route="other"}`:           2,
		`plantstore_http_requests_total{error="405",method="PUT",route="/plants"}`:             1,
		`plantstore_http_request_duration_seconds_count{method="PUT",route="/plants"}`:         1,
		`plantstore_http_requests_total{error="405",method="other",route="/plants"}`:           1,
		`plantstore_http_request_duration_seconds_count{method="other",route="/plants"}`:       1,
		`plantstore_http_requests_total{error="",method="GET",route="/healthz"}`:               1,
		`plantstore_http_request_duration_seconds_count{method="GET",route="/healthz"}`:        1,
	} {
		want[k] = v
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_http_")); diff != "" {
		t.Errorf("series after the requests (-want +got):\n%s", diff)
	}
}

// TestHTTPSharedRegistry shows that handlers given hooks of one registry, such as
// one API mounted under two prefixes, add up into the same series instead
// of failing to register.
func TestHTTPSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	ps := plantstore.New(memstore.New())
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.StripPrefix("/v1", httpapi.New(ps, httpapi.WithTokens(testToken), hooks(t, reg))))
	mux.Handle("/v2/", http.StripPrefix("/v2", httpapi.New(ps, httpapi.WithTokens(testToken), hooks(t, reg))))
	for _, path := range []string{"/v1/healthz", "/v2/healthz", "/v2/healthz"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s = %d, want 200", path, rec.Code)
		}
	}
	key := `plantstore_http_requests_total{error="",method="GET",route="/healthz"}`
	if got := series(t, reg, "plantstore_http_")[key]; got != 3 {
		t.Errorf("%s = %v, want 3", key, got)
	}
}

// TestHTTPRefusedRegistration shows that HTTP fails when the registry
// holds a different collector of the same name.
func TestHTTPRefusedRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "plantstore_http_requests_total", Help: "another"}))
	if _, err := promstats.HTTP(reg); err == nil {
		t.Error("HTTP with a conflicting registry = nil error")
	}
}

func ExampleHTTP() {
	reg := prometheus.NewRegistry()
	hooks, err := promstats.HTTP(reg)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", httpapi.New(plantstore.New(memstore.New()),
		httpapi.InsecureWithoutAuthentication(), httpapi.WithHooks(hooks)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/plants/42", nil))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "plantstore_http_requests_total{") && !strings.HasSuffix(line, " 0\n") {
			fmt.Print(line)
		}
	}
	// Output:
	// plantstore_http_requests_total{error="404",method="GET",route="/plants/{id}"} 1
}
