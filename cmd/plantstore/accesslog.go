package main

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// traceID returns the trace id of the span in ctx, for the access lines'
// trace_id (httpapi.AccessLog's TraceID), and whether ctx has a valid
// one.
func traceID(ctx context.Context) ([16]byte, bool) {
	sc := trace.SpanContextFromContext(ctx)
	return sc.TraceID(), sc.IsValid()
}
