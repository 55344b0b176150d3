package webhook

import (
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

var nan = math.NaN()

// metrics are a Dispatcher's counters. Without a Registerer they count
// into collectors nobody gathers.
type metrics struct {
	delivered, failed, abandoned prometheus.Counter
	down                         prometheus.Gauge
}

// register creates the metrics and registers them, with a gauge that
// reads depth on every scrape, with reg when it is not nil. With a
// dropped function, as for an outbox that can drop events past a bound,
// it also registers plantstore_webhook_dropped_total, which reads it on
// every scrape.
func (m *metrics) register(reg prometheus.Registerer, depth, dropped func() float64) error {
	m.delivered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "plantstore_webhook_deliveries_total",
		Help: "Webhook deliveries that a subscriber acknowledged with a 2xx response.",
	})
	m.failed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "plantstore_webhook_failed_attempts_total",
		Help: "Webhook delivery attempts that failed: no response, a timeout, or a status other than 2xx.",
	})
	m.abandoned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "plantstore_webhook_abandoned_total",
		Help: "Webhook deliveries given up after the maximum age.",
	})
	m.down = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "plantstore_webhook_subscribers_down",
		Help: "Webhook subscribers taken as down after failed attempts in a row: only one delivery at a time is attempted to them, as a probe.",
	})
	if reg == nil {
		return nil
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_webhook_outbox_depth",
		Help: "Events in the webhook outbox that some subscriber has not received or given up yet.",
	}, depth)
	collectors := []prometheus.Collector{m.delivered, m.failed, m.abandoned, m.down, gauge}
	if dropped != nil {
		collectors = append(collectors, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_webhook_dropped_total",
			Help: "Webhook events dropped undelivered, for every subscriber, because the outbox was full.",
		}, dropped))
	}
	var (
		errs []error
		done []prometheus.Collector
	)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		} else {
			done = append(done, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// All or nothing, so that a New with other options can register again.
		for _, c := range done {
			reg.Unregister(c)
		}
		return fmt.Errorf("webhook: register metrics: %w", err)
	}
	return nil
}
