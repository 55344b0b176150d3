package oteltrace_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/sqlstore"
)

const token = "test-token-0123456789"

// newProvider returns a TracerProvider that samples every span and keeps
// the ended ones in the recorder returned.
func newProvider(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, rec
}

// openStore opens a Store on a new SQLite file with hooks.
func openStore(t testing.TB, hooks sqlstore.Hooks) *sqlstore.Store {
	s, err := sqlstore.OpenSQLite(context.Background(), "sqlite", filepath.Join(t.TempDir(), "plants.db"), sqlstore.WithHooks(hooks))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newHandler returns the API over s, traced with tp as a host traces it:
// the handler, with the hooks of HTTP, inside Handler; or, when tp is nil,
// the handler alone.
func newHandler(tp *sdktrace.TracerProvider, s plantstore.Storage) http.Handler {
	opts := []httpapi.Option{httpapi.WithTokens(token), httpapi.WithLogger(slog.New(slog.DiscardHandler))}
	if tp == nil {
		return httpapi.New(plantstore.New(s), opts...)
	}
	api := httpapi.New(plantstore.New(s), append(opts, httpapi.WithHooks(oteltrace.HTTP()),
		httpapi.WithMetricsHandler(http.NotFoundHandler()), httpapi.WithPublicMetrics())...)
	return oteltrace.Handler(api, tp)
}

const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// send serves a request with the token, a JSON body and the incoming
// traceparent.
func send(h http.Handler, method, path, body string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", incoming)
	h.ServeHTTP(httptest.NewRecorder(), req)
}

// TestRequestSpans sends requests with a traceparent through otelhttp
// and the handler, mounted at the root and under a prefix as a host mounts
// it: only the API's own requests, not the probes' and the scrapers', get
// a server span, the incoming span's child, named after the route, with no
// id of the path and no token in any attribute, and the storage call's
// span is its child.
func TestRequestSpans(t *testing.T) {
	for _, prefix := range []string{"", "/api"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			tp, rec := newProvider(t)
			h := newHandler(tp, openStore(t, oteltrace.Storage(tp)))
			if prefix != "" {
				mux := http.NewServeMux()
				mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
				h = mux
			}
			send(h, "POST", prefix+"/plants", `{"id":4242,"name":"Fern"}`)
			for _, path := range []string{"/healthz", "/readyz", "/metrics", "/plants/4242", "/nowhere/4242", "/healthz/x"} {
				send(h, "GET", prefix+path, "")
			}
			send(h, "BREW", prefix+"/plants", "")

			byName := map[string]sdktrace.ReadOnlySpan{}
			var server []string
			for _, s := range rec.Ended() {
				byName[s.Name()] = s
				if s.SpanKind() == trace.SpanKindServer {
					server = append(server, s.Name())
				}
				for _, kv := range s.Attributes() {
					if v := kv.Value.String(); strings.Contains(v, token) || strings.Contains(v, "/plants/4242") {
						t.Errorf("span %q: attribute %s = %q", s.Name(), kv.Key, v)
					}
				}
			}
			if diff := cmp.Diff([]string{"POST /plants", "GET /plants/{id}", "GET", "GET", "HTTP /plants"}, server); diff != "" {
				t.Fatalf("server spans (-want +got):\n%s", diff)
			}
			for _, name := range []string{"storage.create", "storage.read", "storage.commit_batch"} {
				if byName[name] == nil {
					t.Fatalf("no span named %q", name)
				}
			}
			parent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
				propagation.HeaderCarrier{"Traceparent": {incoming}}))
			for _, name := range []string{"POST /plants", "GET /plants/{id}"} {
				s := byName[name]
				if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() {
					t.Errorf("%s: parent %v, want the incoming %v", name, s.Parent(), parent)
				}
				if attr(s, "http.route") != name[strings.IndexByte(name, ' ')+1:] {
					t.Errorf("%s: http.route = %q", name, attr(s, "http.route"))
				}
			}
			childOf(t, byName["storage.create"], byName["POST /plants"])
			childOf(t, byName["storage.read"], byName["GET /plants/{id}"])
			childOf(t, byName["storage.commit_batch"], byName["storage.create"])
		})
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func childOf(t *testing.T, child, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("span %q is not a child of %q", child.Name(), parent.Name())
	}
}

// TestCommitBatchLinks creates plants from many requests at once, each
// under a span of its own: every Create's span reaches its batch's span,
// as its parent or by a link each way.
func TestCommitBatchLinks(t *testing.T) {
	tp, rec := newProvider(t)
	s := openStore(t, oteltrace.Storage(tp))
	tr := tp.Tracer("test")
	const creates = 48
	var wg sync.WaitGroup
	for i := range int64(creates) {
		wg.Go(func() {
			ctx, span := tr.Start(context.Background(), "request")
			defer span.End()
			if err := s.Create(ctx, plantstore.Plant{ID: i, Name: "Fern"}); err != nil {
				t.Errorf("Create(%d) = %v", i, err)
			}
		})
	}
	wg.Wait()
	batches := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var createSpans []sdktrace.ReadOnlySpan
	total := 0
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "storage.commit_batch":
			batches[sp.SpanContext().SpanID()] = sp
			n := 0
			if _, err := fmt.Sscan(attr(sp, "plantstore.batch.creates"), &n); err != nil {
				t.Fatal(err)
			}
			total += n
			if len(sp.Links()) != n-1 {
				t.Errorf("a batch of %d links to %d Creates, want %d", n, len(sp.Links()), n-1)
			}
		case "storage.create":
			createSpans = append(createSpans, sp)
		}
	}
	if total != creates || len(createSpans) != creates {
		t.Fatalf("%d Create spans, batches of %d Creates in all, want %d", len(createSpans), total, creates)
	}
	for _, c := range createSpans {
		found := 0
		for _, b := range batches {
			if b.Parent().SpanID() == c.SpanContext().SpanID() {
				found++
			}
			for _, l := range b.Links() {
				if l.SpanContext.SpanID() == c.SpanContext().SpanID() && slices.ContainsFunc(c.Links(), func(l sdktrace.Link) bool {
					return l.SpanContext.SpanID() == b.SpanContext().SpanID()
				}) {
					found++
				}
			}
		}
		if found != 1 {
			t.Errorf("a Create's span reaches %d batches, want 1", found)
		}
	}
}
