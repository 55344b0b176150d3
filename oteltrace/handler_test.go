package oteltrace_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/oteltrace"
)

// TestHandlerLeavesPolledRoutesOut sends the probes' and the scrapers'
// requests and the API's own through Handler, mounted at the root and
// under a prefix as a host mounts it: only the API's own get a span, named
// after the route.
func TestHandlerLeavesPolledRoutesOut(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/api"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			t.Parallel()
			tp, rec := newProvider(t)
			var h http.Handler = newHandler(tp, memstore.New())
			if prefix != "" {
				mux := http.NewServeMux()
				mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
				h = mux
			}
			for _, path := range []string{"/healthz", "/readyz", "/metrics", "/plants/1", "/healthz/x"} {
				send(h, "GET", prefix+path, "")
			}
			var names []string
			for _, s := range rec.Ended() {
				if s.SpanKind() == trace.SpanKindServer {
					names = append(names, s.Name())
				}
			}
			if diff := cmp.Diff([]string{"GET /plants/{id}", "GET"}, names); diff != "" {
				t.Errorf("server spans (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTraceID checks that TraceID gives the trace id of the span a
// request's context carries, as the access log's trace_id, and nothing
// for a context without one.
func TestTraceID(t *testing.T) {
	t.Parallel()
	tp, _ := newProvider(t)
	var got [16]byte
	var ok bool
	h := oteltrace.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = oteltrace.TraceID(r.Context())
	}), tp)
	send(h, "GET", "/plants/1", "")
	want := [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	if !ok || got != want {
		t.Errorf("TraceID in the request = %x, %v; want %x, true", got, ok, want)
	}
	if id, ok := oteltrace.TraceID(context.Background()); ok || id != ([16]byte{}) {
		t.Errorf("TraceID(context.Background()) = %x, %v; want none", id, ok)
	}
}
