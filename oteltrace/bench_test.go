//go:build unix

package oteltrace_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/sqlstore"
)

// discardExporter takes every batch of spans and keeps none.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

type benchProvider struct {
	name string
	tp   *sdktrace.TracerProvider
}

// benchProviders are the tracing setups the benchmarks compare: none;
// the SDK with a batch span processor to an exporter that discards, every
// span sampled (sampled) or none (unsampled: the spans' contexts are made
// and propagated, nothing is recorded). Compare them with
//
//	go test -run '^$' -bench . -count 6 ./oteltrace > bench.txt
//	benchstat -col /trace bench.txt
func benchProviders(b *testing.B) []benchProvider {
	mk := func(s sdktrace.Sampler) *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(s))
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		return tp
	}
	return []benchProvider{
		{"trace=off", nil},
		{"trace=sampled", mk(sdktrace.AlwaysSample())},
		{"trace=unsampled", mk(sdktrace.ParentBased(sdktrace.NeverSample()))},
	}
}

// BenchmarkCreate creates a plant per op over memory storage, with the
// handler alone (trace=off) or inside otelhttp's with oteltrace's hooks,
// each request without a traceparent: the cost of tracing to a request.
func BenchmarkCreate(b *testing.B) {
	for _, p := range benchProviders(b) {
		b.Run(p.name, func(b *testing.B) {
			h := newHandler(p.tp, memstore.New())
			b.ReportAllocs()
			cpu0, _ := testkit.ProcessCPU()
			for i := 0; b.Loop(); i++ {
				body := `{"id":` + strconv.Itoa(i) + `,"name":"Monstera deliciosa","tag":"aroid"}`
				req := httptest.NewRequest("POST", "/plants", strings.NewReader(body))
				req.Header["Authorization"] = []string{"Bearer " + token}
				req.Header["Content-Type"] = []string{"application/json"}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			cpu1, _ := testkit.ProcessCPU()
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkStorageCreate makes durable Creates on SQLite from 8
// goroutines, each under a span of its own when tracing: the cost of the
// storage and commit-batch spans.
func BenchmarkStorageCreate(b *testing.B) {
	for _, p := range benchProviders(b) {
		b.Run(p.name, func(b *testing.B) {
			var hooks sqlstore.Hooks
			var tr = noop.NewTracerProvider().Tracer("")
			if p.tp != nil {
				hooks = oteltrace.Storage(p.tp)
				tr = p.tp.Tracer("bench")
			}
			s := openStore(b, hooks)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, _ := testkit.ProcessCPU()
			for range 8 {
				wg.Go(func() {
					for id := next.Add(1); id <= int64(b.N); id = next.Add(1) {
						ctx, span := tr.Start(context.Background(), "request")
						if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "bench"}); err != nil {
							b.Error(err)
						}
						span.End()
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			cpu1, _ := testkit.ProcessCPU()
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
