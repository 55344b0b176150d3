package promstats_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

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

// newHTTP returns HTTP's hooks over reg.
func newHTTP(t *testing.T, reg prometheus.Registerer) httpapi.Hooks {
	t.Helper()
	h, err := promstats.HTTP(reg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// served tells h of a request on the route whose pattern is route.
func served(t *testing.T, h httpapi.Hooks, route, method string, code int) {
	t.Helper()
	for _, r := range httpapi.Routes() {
		if r.String() == route {
			h.Served(httpapi.Served{Route: r, Method: method, Code: code, Duration: time.Millisecond})
			return
		}
	}
	t.Fatalf("no route %s", route)
}

// TestHTTP tells the hooks of requests of every outcome and checks the
// series they make; then that hooks of the same registry, such as those of
// one API mounted under two prefixes, add up into the same series instead
// of failing to register, and that HTTP fails when the registry holds a
// different collector of the same name. Which route, method and code
// httpapi tells its hooks of each request is httpapi's TestHooks;
// ExampleHTTP goes through the handler.
func TestHTTP(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHTTP(t, reg)
	if diff := cmp.Diff(zeroSeries(), series(t, reg, "plantstore_http_")); diff != "" {
		t.Errorf("series before any request (-want +got):\n%s", diff)
	}
	for _, s := range []struct {
		route, method string
		code          int
	}{
		{"/plants", "POST", 0}, {"/plants", "POST", 0}, {"/plants", "POST", 409}, {"/plants", "POST", 401},
		{"/plants", "POST", 415}, {"/plants/{id}", "GET", 0}, {"/plants/{id}", "GET", 400},
		{"/plants/{id}", "DELETE", 0}, {"/plants/{id}", "DELETE", 404}, {"other", "GET", 404}, {"other", "GET", 404},
		{"/plants", "PUT", 405},
		{"/plants", "BREW", 405}, // a method HTTP does not define
		{"/healthz", "GET", 0},
		{"/plants", "GET", 418}, // a code no Error holds
	} {
		served(t, h, s.route, s.method, s.code)
	}
	h.Served(httpapi.Served{Route: httpapi.Route(250), Method: "GET", Code: 404}) // a route the handler does not have

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
		`plantstore_http_requests_total{error="404",method="GET",route="other"}`:               3,
		`plantstore_http_request_duration_seconds_count{method="GET",route="other"}`:           3,
		`plantstore_http_requests_total{error="405",method="PUT",route="/plants"}`:             1,
		`plantstore_http_request_duration_seconds_count{method="PUT",route="/plants"}`:         1,
		`plantstore_http_requests_total{error="405",method="other",route="/plants"}`:           1,
		`plantstore_http_request_duration_seconds_count{method="other",route="/plants"}`:       1,
		`plantstore_http_requests_total{error="",method="GET",route="/healthz"}`:               1,
		`plantstore_http_request_duration_seconds_count{method="GET",route="/healthz"}`:        1,
		`plantstore_http_requests_total{error="418",method="GET",route="/plants"}`:             1,
		`plantstore_http_request_duration_seconds_count{method="GET",route="/plants"}`:         1,
	} {
		want[k] = v
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_http_")); diff != "" {
		t.Errorf("series after the requests (-want +got):\n%s", diff)
	}

	served(t, newHTTP(t, reg), "/healthz", "GET", 0)
	want[`plantstore_http_requests_total{error="",method="GET",route="/healthz"}`] = 2
	want[`plantstore_http_request_duration_seconds_count{method="GET",route="/healthz"}`] = 2
	if diff := cmp.Diff(want, series(t, reg, "plantstore_http_")); diff != "" {
		t.Errorf("series after a request to second hooks of the registry (-want +got):\n%s", diff)
	}
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "plantstore_http_requests_total", Help: "another"}))
	if _, err := promstats.HTTP(other); err == nil {
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
