package promstats

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/webhook"
)

// Webhooks registers with reg collectors that read d's [webhook.Stats]
// and outbox depth on each scrape:
//
//   - plantstore_webhook_deliveries_total, the deliveries a subscriber
//     acknowledged;
//   - plantstore_webhook_failed_attempts_total;
//   - plantstore_webhook_abandoned_total, the deliveries given up after
//     the maximum age;
//   - plantstore_webhook_subscribers_down, a gauge;
//   - plantstore_webhook_outbox_depth, a gauge: the outbox's count, taken
//     at most once every 5 seconds whatever the scrapes, NaN when it could
//     not be counted within 5 seconds;
//   - plantstore_webhook_dropped_total, for an outbox that can drop events
//     past a bound (Stats.CanDrop), at 0 while it has none.
//
// Unlike the hooks' collectors, these are d's own: registering those of a
// second Dispatcher with the same reg fails.
func Webhooks(reg prometheus.Registerer, d *webhook.Dispatcher) error {
	counter := func(name, help string, f func(webhook.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(f(d.Stats())) })
	}
	collectors := []prometheus.Collector{
		counter("plantstore_webhook_deliveries_total",
			"Webhook deliveries that a subscriber acknowledged with a 2xx response.",
			func(s webhook.Stats) uint64 { return s.Delivered }),
		counter("plantstore_webhook_failed_attempts_total",
			"Webhook delivery attempts that failed: no response, a timeout, or a status other than 2xx.",
			func(s webhook.Stats) uint64 { return s.FailedAttempts }),
		counter("plantstore_webhook_abandoned_total",
			"Webhook deliveries given up after the maximum age.",
			func(s webhook.Stats) uint64 { return s.Abandoned }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plantstore_webhook_subscribers_down",
			Help: "Webhook subscribers taken as down after failed attempts in a row: only one delivery at a time is attempted to them, as a probe.",
		}, func() float64 { return float64(d.Stats().SubscribersDown) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plantstore_webhook_outbox_depth",
			Help: "Events in the webhook outbox that some subscriber has not received or given up yet, counted at most depthMaxAge before the scrape.",
		}, (&depthCache{d: d}).value),
	}
	if d.Stats().CanDrop {
		collectors = append(collectors, counter("plantstore_webhook_dropped_total",
			"Webhook events dropped undelivered, for every subscriber, because the outbox was full.",
			func(s webhook.Stats) uint64 { return s.Dropped }))
	}
	var done []prometheus.Collector
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			// All or nothing, so that the caller can try again.
			for _, c := range done {
				reg.Unregister(c)
			}
			return fmt.Errorf("promstats: register webhook metrics: %w", err)
		}
		done = append(done, c)
	}
	return nil
}

// depthTimeout bounds a scrape's count of the outbox.
const depthTimeout = 5 * time.Second

// depthMaxAge is how long a count of the outbox answers scrapes: counting
// a database outbox is a query (count(*) of its events), which a flood of
// scrapes, or many scrapers, would otherwise repeat for each.
const depthMaxAge = 5 * time.Second

// A depthCache counts a Dispatcher's outbox at most once every
// depthMaxAge, one count at a time, however many scrapes ask.
type depthCache struct {
	d  *webhook.Dispatcher
	mu sync.Mutex
	at time.Time // when n was counted; zero before the first count
	n  float64
}

func (c *depthCache) value() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < depthMaxAge {
		return c.n
	}
	ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
	defer cancel()
	n, err := c.d.Depth(ctx)
	if err != nil {
		// Not kept: the next scrape counts again.
		return math.NaN()
	}
	c.at, c.n = time.Now(), float64(n)
	return c.n
}
