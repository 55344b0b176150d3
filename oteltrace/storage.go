package oteltrace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/sqlstore"
)

// Storage returns the [sqlstore.Hooks] that give, with tracers of tp, a
// span to each Create, Plant (read), List and Delete of a Store, a child
// of the span in the caller's context, and one to each group-commit
// transaction. The Store's other operations, the outbox's and the
// readiness checks', which no request makes, have none.
//
// A group-commit transaction stores the Creates of several requests: its
// span, "storage.commit_batch", is a child of the first Create's span and
// links to the others', which each link back to it. Its attribute
// plantstore.batch.creates counts the Creates it stores.
//
// Give them to [sqlstore.WithHooks]; to count and time as well, set Done
// and Committed of the same Hooks (from package promstats, say).
func Storage(tp trace.TracerProvider) sqlstore.Hooks {
	s := &storage{t: tp.Tracer(instrumentation, trace.WithInstrumentationVersion(version))}
	return sqlstore.Hooks{Start: s.start, Batch: s.batch}
}

type storage struct{ t trace.Tracer }

// spanNames are the names of the spans of the operations traced, by Op;
// "" for the others.
var spanNames = func() []string {
	names := make([]string, len(sqlstore.Ops()))
	for _, op := range []sqlstore.Op{sqlstore.OpCreate, sqlstore.OpRead, sqlstore.OpList, sqlstore.OpDelete} {
		names[op] = "storage." + op.String()
	}
	return names
}()

func (s *storage) start(ctx context.Context, op sqlstore.Op) (context.Context, func(sqlstore.Outcome)) {
	if int(op) >= len(spanNames) || spanNames[op] == "" {
		return ctx, nil
	}
	ctx, span := s.t.Start(ctx, spanNames[op], trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("plantstore.storage.operation", op.String())))
	return ctx, func(k sqlstore.Outcome) { end(span, k) }
}

func (s *storage) batch(joined []context.Context) func(sqlstore.Outcome) {
	var parent trace.SpanContext
	links := make([]trace.Link, 0, len(joined))
	for _, ctx := range joined {
		sc := trace.SpanContextFromContext(ctx)
		switch {
		case !sc.IsValid():
		case !parent.IsValid():
			parent = sc
		default:
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	_, span := s.t.Start(ctx, "storage.commit_batch", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("plantstore.batch.creates", len(joined))))
	if len(links) > 0 && span.IsRecording() {
		back := trace.Link{SpanContext: span.SpanContext()}
		for _, ctx := range joined {
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.Equal(parent) {
				trace.SpanFromContext(ctx).AddLink(back)
			}
		}
	}
	return func(k sqlstore.Outcome) { end(span, k) }
}

// end ends span, marking it failed unless k is OK.
func end(span trace.Span, k sqlstore.Outcome) {
	if k != sqlstore.OK {
		span.SetAttributes(attribute.String("error.type", k.String()))
		span.SetStatus(codes.Error, k.String())
	}
	span.End()
}
