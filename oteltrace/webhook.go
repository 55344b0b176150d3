package oteltrace

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/webhook"
)

// Webhooks returns the [webhook.Hooks] that give, with tracers of tp, a
// span to each delivery attempt, "webhook.attempt", a client span, and
// send its context to the subscriber in the W3C traceparent header.
//
// The attempt is the root of a trace of its own: it is made from the
// outbox, later than the create that made the event and maybe by another
// process, and the outbox keeps no trace context. Its attributes
// plantstore.plant.id and plantstore.webhook.id (the webhook-id header,
// the same for every attempt of an event) lead back to the create;
// plantstore.webhook.attempt numbers the attempts of a delivery.
func Webhooks(tp trace.TracerProvider) webhook.Hooks {
	w := &webhooks{t: tp.Tracer(instrumentation, trace.WithInstrumentationVersion(version))}
	return webhook.Hooks{Attempt: w.attempt}
}

type webhooks struct{ t trace.Tracer }

func (w *webhooks) attempt(ctx context.Context, a webhook.Attempt, h http.Header) (context.Context, func(int, error)) {
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", http.MethodPost),
		attribute.Int64("plantstore.plant.id", a.PlantID),
		attribute.String("plantstore.webhook.id", a.MessageID),
		attribute.Int("plantstore.webhook.attempt", a.Number),
		attribute.Int("plantstore.webhook.subscriber_index", a.Subscriber),
	}
	if u, err := url.Parse(a.Origin); err == nil {
		attrs = append(attrs, attribute.String("url.scheme", u.Scheme), attribute.String("server.address", u.Hostname()))
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	ctx, span := w.t.Start(ctx, "webhook.attempt", trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return ctx, func(status int, err error) {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if err != nil {
			kind := "no_response"
			if status != 0 {
				kind = strconv.Itoa(status)
			}
			span.SetAttributes(attribute.String("error.type", kind))
			span.SetStatus(codes.Error, kind)
		}
		span.End()
	}
}
