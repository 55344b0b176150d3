package promstats_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/webhook"
)

// registerWebhooks registers Webhooks of a dispatcher over o with a new
// registry.
func registerWebhooks(t *testing.T, o plantstore.Outbox) (*prometheus.Registry, *webhook.Dispatcher) {
	t.Helper()
	d, err := webhook.New(o, []string{"http://127.0.0.1:1/"}, []byte(testkit.WebhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := promstats.Webhooks(reg, d); err != nil {
		t.Fatal(err)
	}
	return reg, d
}

func TestWebhooks(t *testing.T) {
	mo := webhook.NewMemoryOutbox(webhook.WithMaxPending(2), webhook.WithDropLogger(slog.New(slog.DiscardHandler)))
	reg, d := registerWebhooks(t, mo)
	for id := range int64(5) {
		mo.Add(plantstore.Plant{ID: id, Name: "p"})
	}
	want := map[string]float64{
		"plantstore_webhook_deliveries_total{}":      0,
		"plantstore_webhook_failed_attempts_total{}": 0,
		"plantstore_webhook_abandoned_total{}":       0,
		"plantstore_webhook_subscribers_down{}":      0,
		"plantstore_webhook_outbox_depth{}":          2,
		"plantstore_webhook_dropped_total{}":         3,
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_webhook_")); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	// All or nothing: a second registration fails and leaves the first.
	if err := promstats.Webhooks(reg, d); err == nil {
		t.Error("Webhooks registering the same names twice = nil error")
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_webhook_")); diff != "" {
		t.Errorf("series after a refused registration (-want +got):\n%s", diff)
	}
}

// countingOutbox counts the calls of Depth.
type countingOutbox struct {
	*webhook.MemoryOutbox
	depths atomic.Int64
}

func (c *countingOutbox) Depth(ctx context.Context) (int, error) {
	c.depths.Add(1)
	return c.MemoryOutbox.Depth(ctx)
}

// TestWebhookDepthCounted checks that a flood of scrapes counts the outbox
// once, not once a scrape: counting a database's is a query.
func TestWebhookDepthCounted(t *testing.T) {
	o := &countingOutbox{MemoryOutbox: webhook.NewMemoryOutbox()}
	reg, _ := registerWebhooks(t, o)
	for range 50 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if n := o.depths.Load(); n != 1 {
		t.Errorf("50 scrapes counted the outbox %d times, want once", n)
	}
}
