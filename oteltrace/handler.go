package oteltrace

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/httpapi"
)

// Handler wraps h, the API's handler made with [HTTP]'s hooks, in
// otelhttp's, which gives each request a server span from tp, the child
// of the one its W3C traceparent header names, if any, named by
// [SpanName]. The routes that machines poll ([httpapi.Route.Polled]:
// /healthz, /readyz, /metrics) get no span: a load balancer or a
// scraper asks for them every few seconds, and their spans would drown
// the requests'.
//
// Mount it where the API's own paths reach it, inside any
// [http.StripPrefix], so that it knows the polled routes and names the
// spans after the API's routes:
//
//	mux.Handle("/api/", http.StripPrefix("/api", oteltrace.Handler(api, tp)))
func Handler(h http.Handler, tp trace.TracerProvider) http.Handler {
	return otelhttp.NewHandler(h, "plantstore",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(SpanName),
		otelhttp.WithFilter(traced))
}

// traced reports whether r gets a span: see [Handler].
func traced(r *http.Request) bool { return !httpapi.RouteOf(r.URL.Path).Polled() }

// TraceID returns the trace id of the span in ctx, and whether there is
// a valid one: for an access log's trace_id, so that a log line leads to
// its request's trace.
func TraceID(ctx context.Context) (id [16]byte, ok bool) {
	sc := trace.SpanContextFromContext(ctx)
	return sc.TraceID(), sc.IsValid()
}
