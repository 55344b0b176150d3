package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/plantstore/plantstore/internal/testkit"
)

// An otlpReceiver is an OTLP/HTTP receiver of traces on loopback: it keeps
// every span POSTed to /v1/traces, with its service's name.
type otlpReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services map[string]bool
	problems []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{services: map[string]bool{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if r.Method != "POST" || r.URL.Path != "/v1/traces" || err != nil {
			rc.problems = append(rc.problems, fmt.Sprintf("%s %s %s: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					rc.services[kv.Value.GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	t.Cleanup(func() {
		rc.srv.Close()
		for _, p := range rc.problems {
			t.Errorf("OTLP receiver: %s", p)
		}
	})
	return rc
}

// find returns the spans received named name.
func (rc *otlpReceiver) find(name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var found []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// TestRunExportsTraces runs run with -otlp-endpoint at a receiver of its
// own and a webhook subscriber, and creates a plant and reads it back, each
// request with a traceparent: the receiver gets the spans of the API, the
// storage and the webhook, in the incoming trace and under
// OTEL_SERVICE_NAME, and the access lines carry the trace's id. How the
// spans nest is oteltrace's TestRequestSpans; the traceparent a subscriber
// gets, its TestWebhookAttemptSpans.
func TestRunExportsTraces(t *testing.T) {
	// Read by the SDK from the process's environment: not parallel.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "plantstore-e2e")
	otlp := newOTLPReceiver(t)
	sub := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer sub.Close()
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "traced.db"),
		"-log-format", "json", "-otlp-endpoint", otlp.srv.URL, "-webhook", sub.URL + "/hook"},
		map[string]string{"PLANTSTORE_TOKENS": procToken, "PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret})

	const traceID, postParent, getParent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "00f067aa0ba902b8"
	send := func(method, path, body, parent string) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+procToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	send("POST", "/plants", `{"id":918273,"name":"Fern"}`, postParent)
	send("GET", "/plants/918273", "", getParent)

	testkit.WaitUntil(t, 30*time.Second, "the spans", func() bool {
		for _, name := range []string{"POST /plants", "GET /plants/{id}", "storage.create", "storage.read", "storage.commit_batch", "webhook.attempt"} {
			if len(otlp.find(name)) == 0 {
				return false
			}
		}
		return true
	})
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	for name, parent := range map[string]string{"POST /plants": postParent, "GET /plants/{id}": getParent} {
		if s := otlp.find(name)[0]; hex.EncodeToString(s.TraceId) != traceID || hex.EncodeToString(s.ParentSpanId) != parent {
			t.Errorf("%s: trace %x, parent %x; want a child of %s in trace %s", name, s.TraceId, s.ParentSpanId, parent, traceID)
		}
	}
	if !otlp.services["plantstore-e2e"] {
		t.Errorf("services %v, want OTEL_SERVICE_NAME's plantstore-e2e", otlp.services)
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, `"msg":"request"`) && !strings.Contains(line, `"trace_id":"`+traceID+`"`) {
			t.Errorf("access line without the trace id: %s", line)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"request","method":"GET","path":"/plants/918273"`) {
		t.Errorf("no access line of the GET:\n%s", stderr)
	}
}
