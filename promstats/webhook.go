package promstats

import (
	"context"
	"fmt"
	"math"
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
//   - plantstore_webhook_outbox_depth, a gauge, NaN when the outbox could
//     not be counted within depthTimeout;
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
			Help: "Events in the webhook outbox that some subscriber has not received or given up yet.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
			defer cancel()
			n, err := d.Depth(ctx)
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}),
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
