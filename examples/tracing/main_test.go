package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestProgram starts the example with OTEL_EXPORTER_OTLP_ENDPOINT at a
// receiver of the test's, creates a plant through the API under /api/ and
// asks for /api/healthz as a load balancer would, stops it with SIGTERM,
// and checks that the spans it flushed are the create's, named after the
// API's route, and its storage call's, and none of the probe's.
func TestProgram(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("export %s: not an ExportTraceServiceRequest", r.URL.Path)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name] = true
				}
			}
		}
	}))
	defer otlp.Close()
	p := testkit.Start(t, testkit.Build(t, "."), testkit.Env("PLANTSTORE_ADDR=127.0.0.1:0", "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL))
	if status, code, err := testkit.Create(t.Context(), http.DefaultClient, p.URL+"/api", "alice-token", 1, "Monstera"); status != 200 {
		t.Fatalf("POST /api/plants: %d, error %d, %v", status, code, err)
	}
	if status, _, _, err := testkit.Get(http.DefaultClient, p.URL+"/api/healthz", ""); status != 200 {
		t.Fatalf("GET /api/healthz: %d, %v", status, err)
	}
	if err := p.Stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"POST /plants", "storage.create", "storage.commit_batch"} {
		if !names[name] {
			t.Errorf("no span %q among those flushed at exit: %v", name, names)
		}
	}
	for _, name := range []string{"GET /healthz", "GET"} {
		if names[name] {
			t.Errorf("a span %q for the probe among those flushed at exit: %v", name, names)
		}
	}
}
