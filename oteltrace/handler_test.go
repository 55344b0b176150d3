package oteltrace_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/plantstore/plantstore/oteltrace"
)

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
