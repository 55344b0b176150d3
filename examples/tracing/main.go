// Command tracing mounts the Plant Store API under /api/ in an existing
// net/http server, as examples/embed does, on durable SQLite storage, and
// traces it with OpenTelemetry: each request gets otelhttp's server span,
// named after its route by package oteltrace's hooks, with the storage
// call and its group-commit transaction as child spans, exported over
// OTLP/HTTP.
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./examples/tracing
//	curl -H 'Authorization: Bearer alice-token' -H 'Content-Type: application/json' \
//	     -d '{"id":1,"name":"Monstera"}' http://127.0.0.1:8084/api/plants
//
// The exporter reads the standard OTEL_EXPORTER_OTLP_* variables (its
// default is localhost:4318), the SDK OTEL_TRACES_SAMPLER. It listens on
// 127.0.0.1:8084, or on $PLANTSTORE_ADDR, keeps plants in plants.db in a
// temporary directory, and stops cleanly on SIGINT or SIGTERM, flushing
// its spans.
package main

import (
	"cmp"
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/sqlstore"
)

var users = map[string]string{"alice-token": "alice"}

func authenticate(ctx context.Context, token string) error {
	if _, ok := users[token]; !ok {
		return errors.New("unknown user")
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The host's SDK and exporter: the library links neither.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(sctx) // flushes the spans left
	}()

	dir, err := os.MkdirTemp("", "plantstore-tracing-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Storage spans: children of the request's span, which reaches the
	// Store through the request's context.
	store, err := sqlstore.OpenSQLite(ctx, "sqlite", filepath.Join(dir, "plants.db"), sqlstore.WithHooks(oteltrace.Storage(tp)))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	api := httpapi.New(plantstore.New(store),
		httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(authenticate)),
		httpapi.WithHooks(oteltrace.HTTP())) // names the request's span after its route
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("the host's own pages\n")) })
	// The request's span inside StripPrefix, so that it sees the API's own
	// paths: the probes get none, and the span keeps the route's name
	// where the mux's pattern would rename it.
	mux.Handle("/api/", http.StripPrefix("/api", oteltrace.Handler(api, tp)))

	serve(ctx, mux)
}

// serve serves h until ctx ends, then drains it. Package server serves it
// as the plantstore binary serves its API: the same client deadlines and
// header limit.
func serve(ctx context.Context, h http.Handler) {
	srv, err := server.Listen(cmp.Or(os.Getenv("PLANTSTORE_ADDR"), "127.0.0.1:8084"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on http://%s; the Plant Store API is under /api/", srv.Addr())
	if err := srv.Serve(ctx, h); err != nil {
		log.Fatal(err)
	}
	log.Println("stopped")
}
