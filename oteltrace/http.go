package oteltrace

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/httpapi"
)

// HTTP returns the [httpapi.Hooks] that name each request's span, the one
// in its context (otelhttp's, as a rule), after the route its path
// matched: "POST /plants", "GET /plants/{id}", or the method alone for a
// path that matches no route. They set http.route, and url.path, which
// otelhttp sets to the path as sent, to the route, so that no plant id of
// a path is kept. A request with no recording span costs them nothing
// more than a look into its context.
//
// Routes are the handler's own: a handler mounted under a prefix names
// its spans without it.
func HTTP() httpapi.Hooks {
	return httpapi.Hooks{Routed: routed}
}

func routed(ctx context.Context, route httpapi.Route, method string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if route == httpapi.RouteOther {
		span.SetName(methodName(method))
		return
	}
	r := route.String()
	span.SetName(methodName(method) + " " + r)
	span.SetAttributes(attribute.String("http.route", r), attribute.String("url.path", r))
}

// SpanName is a span name formatter for otelhttp's WithSpanNameFormatter:
// the name [HTTP]'s hooks give, from the request's path relative to the
// handler. otelhttp renames its span after the handler returns when a
// ServeMux routed the request (by the mux's pattern, such as "GET
// /api/"), unless given this.
func SpanName(_ string, r *http.Request) string {
	route := httpapi.RouteOf(r.URL.Path)
	if route == httpapi.RouteOther {
		return methodName(r.Method)
	}
	return methodName(r.Method) + " " + route.String()
}

// methodName is m when HTTP defines it, and "HTTP" otherwise, as the
// semantic conventions name spans, so that no made-up method names one.
func methodName(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "HTTP"
}
