package oteltrace_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/oteltrace"
	"github.com/plantstore/plantstore/webhook"
)

// TestWebhookAttemptSpans fails a delivery's first attempt and takes its
// second: each attempt is a root client span, and the subscriber receives
// each one's traceparent.
func TestWebhookAttemptSpans(t *testing.T) {
	tp, rec := newProvider(t)
	var mu sync.Mutex
	var received []trace.SpanContext
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(r.Header)))
		mu.Lock()
		defer mu.Unlock()
		received = append(received, sc)
		if len(received) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer sub.Close()
	mo := webhook.NewMemoryOutbox()
	d, err := webhook.New(mo, []string{sub.URL + "/hook"}, []byte(testkit.WebhookSecret), webhook.WithHooks(oteltrace.Webhooks(tp)),
		webhook.WithBackoff(time.Millisecond, time.Millisecond), webhook.WithPollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	ps := plantstore.New(memstore.New(), plantstore.OnCreate(mo.Add))
	if _, err := ps.Create(context.Background(), plantstore.NewPlant{ID: 7, Name: "Fern"}); err != nil {
		t.Fatal(err)
	}
	d.Notify()
	testkit.WaitUntil(t, 30*time.Second, "2 attempt spans ended", func() bool { return len(rec.Ended()) >= 2 })
	spans := rec.Ended()
	mu.Lock()
	defer mu.Unlock()
	for i, s := range spans[:2] {
		sc := s.SpanContext()
		if s.Name() != "webhook.attempt" || s.SpanKind() != trace.SpanKindClient || s.Parent().IsValid() {
			t.Errorf("span %d: %q, kind %v, parent %v; want a root client span webhook.attempt", i, s.Name(), s.SpanKind(), s.Parent())
		}
		if received[i].TraceID() != sc.TraceID() || received[i].SpanID() != sc.SpanID() {
			t.Errorf("attempt %d: traceparent %v, want span %v", i+1, received[i], sc)
		}
		if a := attr(s, "plantstore.webhook.attempt"); a != string(rune('1'+i)) {
			t.Errorf("span %d: attempt %s", i, a)
		}
		if attr(s, "plantstore.plant.id") != "7" {
			t.Errorf("span %d: plant id %q, want 7", i, attr(s, "plantstore.plant.id"))
		}
	}
	if got := []string{attr(spans[0], "http.response.status_code"), attr(spans[1], "http.response.status_code")}; got[0] != "503" || got[1] != "200" {
		t.Errorf("statuses %v, want 503 then 200", got)
	}
	if spans[0].Status().Code.String() != "Error" || spans[1].Status().Code.String() == "Error" {
		t.Errorf("span statuses %v, %v: want the failed attempt's only to be an error", spans[0].Status(), spans[1].Status())
	}
}
