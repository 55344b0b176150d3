package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/sqlstore"
)

// tracingOn reports whether the binary exports spans: when -otlp-endpoint,
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says
// where to, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func tracingOn(o *options, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return o.otlpEndpoint != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// The rules of -otlp-endpoint.
const (
	errOTLPEndpoint valueRule = "must be an http:// or https:// URL with a host, such as http://collector:4318"
	errOTLPQuery    valueRule = "must have no query or fragment"
)

// checkOTLPEndpoint checks -otlp-endpoint: an absolute http or https URL,
// the base of an OTLP/HTTP receiver's paths.
func checkOTLPEndpoint(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return errOTLPEndpoint
	case u.RawQuery != "" || u.Fragment != "":
		return errOTLPQuery
	}
	return nil
}

// tracesURL is the URL spans are POSTed to for -otlp-endpoint base:
// base's path with /v1/traces after it, as OTEL_EXPORTER_OTLP_ENDPOINT is
// read.
func tracesURL(base string) string {
	u, _ := url.Parse(base)
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String()
}

// startTracing returns the TracerProvider of the binary's spans, exported
// over OTLP/HTTP as the OTEL_* variables and -otlp-endpoint say, and the
// function that flushes them, with -shutdown-timeout of its own; or nil
// and a function that does nothing when tracing is off.
func startTracing(ctx context.Context, o *options, getenv func(string) string, logger *slog.Logger) (*sdktrace.TracerProvider, func(), error) {
	if !tracingOn(o, getenv) {
		return nil, func() {}, nil
	}
	var eopts []otlptracehttp.Option
	if o.otlpEndpoint != "" {
		eopts = append(eopts, otlptracehttp.WithEndpointURL(tracesURL(o.otlpEndpoint)))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("plantstore"), semconv.ServiceVersion(buildinfo.Read(buildVersion, buildCommit).Version)))
	if err == nil {
		var env *resource.Resource
		if env, err = resource.New(ctx, resource.WithFromEnv()); err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	// Export failures (a receiver down) are logged, and the spans dropped:
	// requests never wait for the receiver.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: export failed", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	logger.Info("exporting traces over OTLP/HTTP", "endpoint", sqlstore.RedactDSN(endpointForLog(o, getenv)))
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("tracing: flushing spans at shutdown failed", "err", err)
		}
	}, nil
}

// endpointForLog names where spans go, for the startup line.
func endpointForLog(o *options, getenv func(string) string) string {
	switch {
	case o.otlpEndpoint != "":
		return tracesURL(o.otlpEndpoint)
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + " (+ /v1/traces)"
}
