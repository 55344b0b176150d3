//go:build unix

package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/promstats"
)

// The benchmarks below drive one handler in process, the way a server
// would, minus the network: each op builds a request with httptest and a
// ResponseRecorder and calls ServeHTTP. BenchmarkHarness is that
// construction around a handler that does nothing, so its figures are to be
// subtracted from the others': what is left is what the handler costs.
//
// Every benchmark runs beside the same live heap, ballast, so that garbage
// collection paces them all alike. Without it, one that keeps a growing
// store would collect less often than the harness alone, its own garbage
// would cost it less, and it would look cheaper than it is.
//
// Besides ns/op each reports cpu-ns/op, the CPU time the whole process
// spent per op, garbage collection included. On a busy machine it moves
// far less than ns/op, which counts the time other processes hold the CPU.

// The headers of a benchmark's requests, copied into each.
var (
	authHeader = http.Header{"Authorization": {"Bearer " + testToken}}
	jsonHeader = http.Header{"Authorization": authHeader["Authorization"], "Content-Type": {"application/json"}}
)

const benchName = "Monstera deliciosa"

// benchCreateBody returns a valid NewPlant body with id i and name, written
// over buf, with a tag unless untagged is set.
func benchCreateBody(buf []byte, i int, name string, untagged bool) []byte {
	buf = append(buf[:0], `{"id":`...)
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(append(append(buf, `,"name":"`...), name...), '"')
	if untagged {
		return append(buf, '}')
	}
	return append(buf, `,"tag":"aroid"}`...)
}

// A benchCase is one kind of request sent again and again.
type benchCase struct {
	method, target string
	header         http.Header
	// body returns the i-th request's body. It may reuse its memory: the
	// handler is done with one body before the next is made.
	body func(i int) []byte
}

func (c benchCase) newRequest(i int) *http.Request {
	req := httptest.NewRequest(c.method, c.target, bytes.NewReader(c.body(i)))
	maps.Copy(req.Header, c.header)
	return req
}

// createCase posts a valid plant named name with a new id each time.
func createCase(name string, untagged bool) benchCase {
	var buf []byte
	return benchCase{method: "POST", target: "/plants", header: jsonHeader, body: func(i int) []byte {
		buf = benchCreateBody(buf, i, name, untagged)
		return buf
	}}
}

func fixedCase(method, target, body string, header http.Header) benchCase {
	b := []byte(body)
	return benchCase{method: method, target: target, header: header, body: func(int) []byte { return b }}
}

// ballast is live heap without pointers: the collector need not scan it,
// and the pages of it that are never written take no memory.
var ballast = make([]byte, 64<<20)

// serveBench sends c's requests to h, b.N of them after warmUp more that
// are not timed, numbering them from first on. Warming up lets the heap
// reach its working size first, so that no benchmark pays more than
// another for fresh memory.
func serveBench(b *testing.B, h http.Handler, c benchCase, first int) {
	defer runtime.KeepAlive(ballast)
	const warmUp = 1 << 14
	for i := first; i < first+warmUp; i++ {
		h.ServeHTTP(httptest.NewRecorder(), c.newRequest(i))
	}
	runtime.GC()
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := first + warmUp; b.Loop(); i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, c.newRequest(i))
	}
}

// reportCPU starts counting the CPU time of the whole process; the func it
// returns reports it per op, as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	start, ok := testkit.ProcessCPU()
	return func() {
		if end, ok2 := testkit.ProcessCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// checkBench fails b unless h answers c's request number i with status
// and, when code is not zero, an Error with that code.
func checkBench(b *testing.B, h http.Handler, c benchCase, i, status, code int) {
	b.Helper()
	if rec := serve(h, c.newRequest(i)); rec.Code != status || code != 0 && testkit.ErrorCode(rec.Body.Bytes()) != code {
		b.Fatalf("answer %d %s, want %d with error code %d", rec.Code, rec.Body, status, code)
	}
}

func BenchmarkHarness(b *testing.B) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	serveBench(b, h, createCase(benchName, false), 0)
}

var floorBody = []byte(`{"name":"Monstera deliciosa","tag":"aroid"}`)

// floorHandler reads the whole body and answers 200 with a fixed Plant. It
// checks and parses nothing: it is the least any handler can do.
func floorHandler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(http.StatusOK)
	w.Write(floorBody)
}

func BenchmarkFloor(b *testing.B) {
	serveBench(b, http.HandlerFunc(floorHandler), createCase(benchName, false), 0)
}

// freshStores serves each request with a handler over memory storage that
// it replaces with a new one every size requests. Otherwise the store would
// grow by a plant per op, and every garbage collection, paid for by
// whatever allocates, the harness included, would mark the whole store: the
// figures would measure the cost of a large live heap to the harness's own
// garbage rather than the HTTP path.
type freshStores struct {
	size int
	opts []httpapi.Option
	h    http.Handler
	n    int
}

func (f *freshStores) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.h == nil || f.n == f.size && f.size > 0 {
		f.h = newHandler(nil, f.opts...)
		f.n = 0
	}
	f.n++
	f.h.ServeHTTP(w, r)
}

// BenchmarkCreate creates a new plant per op, without (log=off) and with
// (log=on) an access log formatted as JSON and thrown away, in stores that
// start over every 4096 plants or, to show what a larger live heap costs
// the harness's garbage collection, every 65536. The metrics=on cases add
// the hooks of package promstats, its registry never gathered.
func BenchmarkCreate(b *testing.B) {
	accessLog := []httpapi.Option{httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{Format: httpapi.JSONLog})}
	metrics := []httpapi.Option{promHooks(b)}
	for _, tt := range []struct {
		name     string
		size     int
		untagged bool
		opts     []httpapi.Option
	}{
		{"store=4k/log=off", 1 << 12, false, nil},
		{"store=4k/log=off/tag=none", 1 << 12, true, nil},
		{"store=4k/log=on", 1 << 12, false, accessLog},
		{"store=4k/log=off/metrics=on", 1 << 12, false, metrics},
		{"store=4k/log=on/metrics=on", 1 << 12, false, append(metrics, accessLog...)},
		{"store=64k/log=off", 1 << 16, false, nil},
		{"store=grow/log=off", 0, false, nil},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := &freshStores{size: tt.size, opts: tt.opts}
			c := createCase(benchName, tt.untagged)
			checkBench(b, h, c, -1, http.StatusOK, 0)
			serveBench(b, h, c, 0)
		})
	}
}

// BenchmarkMount creates a plant per op as BenchmarkCreate's
// store=4k/log=off does, with the handler at the root (mount=none), and
// under /api/ of a host's http.ServeMux, inside http.StripPrefix
// (mount=strip) or with WithPrefix (mount=prefix).
func BenchmarkMount(b *testing.B) {
	for _, tt := range []struct {
		name string
		mux  func(*freshStores) http.Handler
	}{
		{"mount=none", func(f *freshStores) http.Handler { return f }},
		{"mount=strip", func(f *freshStores) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/api/", http.StripPrefix("/api", f))
			return mux
		}},
		{"mount=prefix", func(f *freshStores) http.Handler {
			f.opts = []httpapi.Option{httpapi.WithPrefix("/api")}
			mux := http.NewServeMux()
			mux.Handle("/api/", f)
			return mux
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := tt.mux(&freshStores{size: 1 << 12})
			c := createCase(benchName, false)
			if tt.name != "mount=none" {
				c.target = "/api/plants"
			}
			checkBench(b, h, c, -1, http.StatusOK, 0)
			serveBench(b, h, c, 0)
		})
	}
}

// BenchmarkError sends requests that fail, one kind per sub-benchmark.
func BenchmarkError(b *testing.B) {
	tooLarge := `{"id":1,"name":"` + strings.Repeat("a", httpapi.DefaultMaxBodyBytes) + `"}`
	valid := `{"id":1,"name":"Monstera deliciosa","tag":"aroid"}`
	header := func(k, v string) http.Header { // jsonHeader but for k
		h := jsonHeader.Clone()
		h.Set(k, v)
		return h
	}
	tests := []struct {
		name     string
		c        benchCase
		wantCode int
	}{
		{"unauthorized", fixedCase("POST", "/plants", valid, header("Authorization", "Bearer not-"+testToken)), 401},
		{"content-type", fixedCase("POST", "/plants", valid, header("Content-Type", "text/plain")), 415},
		{"too-large", fixedCase("POST", "/plants", tooLarge, jsonHeader), 413},
		{"malformed", fixedCase("POST", "/plants", `{"id":1,"name":"Monstera deliciosa","tag":"aroid"`, jsonHeader), 400},
		{"invalid", fixedCase("POST", "/plants", `{"id":"1","name":"Monstera deliciosa","tag":"aroid"}`, jsonHeader), 400},
		{"conflict", fixedCase("POST", "/plants", valid, jsonHeader), 409},
		{"not-found", fixedCase("POST", "/plant", valid, jsonHeader), 404},
		{"method", fixedCase("PUT", "/plants", valid, jsonHeader), 405},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			h := newHandler(nil)
			if tt.wantCode == http.StatusConflict {
				checkBench(b, h, tt.c, 0, http.StatusOK, 0)
			}
			checkBench(b, h, tt.c, 0, http.StatusBadRequest, tt.wantCode)
			serveBench(b, h, tt.c, 0)
		})
	}
}

// BenchmarkMetrics times what the hooks of package promstats add to a
// request, on its own and beside an access log, around the cheapest route, GET /healthz, answered
// into a writer that throws it away.
func BenchmarkMetrics(b *testing.B) {
	req := httptest.NewRequest("GET", "/healthz", nil)
	w := discardWriter{http.Header{}}
	// At debug, /healthz's successes are written too.
	accessLog := httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{Level: slog.LevelDebug})
	for _, tt := range []struct {
		name string
		opts []httpapi.Option
	}{
		{"log=off/metrics=off", nil},
		{"log=off/metrics=on", []httpapi.Option{promHooks(b)}},
		{"log=on/metrics=off", []httpapi.Option{accessLog}},
		{"log=on/metrics=on", []httpapi.Option{accessLog, promHooks(b)}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := httpapi.New(plantstore.New(memstore.New()),
				append([]httpapi.Option{httpapi.InsecureWithoutAuthentication()}, tt.opts...)...)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is an http.ResponseWriter that throws away what it is given.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w discardWriter) WriteHeader(int)             {}

// BenchmarkCreateLargeBody creates plants whose bodies take about size
// bytes, up to the default limit, where the handler's body buffer must
// grow past its pooled size while the body arrives.
func BenchmarkCreateLargeBody(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, httpapi.DefaultMaxBodyBytes - 64} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			c := createCase(strings.Repeat("a", size-len(`{"id":1234567890,"name":""}`)), true)
			h := &freshStores{size: 64}
			checkBench(b, h, c, -1, http.StatusOK, 0)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h.ServeHTTP(httptest.NewRecorder(), c.newRequest(i))
			}
		})
	}
}

// BenchmarkList lists a page of small plants, of the default limit and of
// the largest, from a store of 10,000.
func BenchmarkList(b *testing.B) {
	h := newHandler(nil)
	c := createCase(benchName, false)
	for i := range 10000 {
		checkBench(b, h, c, i, http.StatusOK, 0)
	}
	for _, limit := range []int{100, 1000} {
		b.Run("limit="+strconv.Itoa(limit), func(b *testing.B) {
			c := fixedCase("GET", "/plants?limit="+strconv.Itoa(limit)+"&after=4000", "", authHeader)
			checkBench(b, h, c, 0, http.StatusOK, 0)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), c.newRequest(0))
			}
		})
	}
}

// promHooks returns the option that gives a handler the Prometheus hooks
// of package promstats, over a registry of its own.
func promHooks(b *testing.B) httpapi.Option {
	h, err := promstats.HTTP(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return httpapi.WithHooks(h)
}
