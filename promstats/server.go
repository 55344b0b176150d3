package promstats

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/server"
)

// Server registers with reg collectors that read s's [server.Stats] on
// each scrape, named as Prometheus names its own:
//
//   - plantstore_config_reloads_total{result="success"|"failure"}, the
//     reloads that kept no old value and those that kept one after an
//     error;
//   - for each thing a reload re-reads, labelled what="certificate",
//     "tokens", "webhook secret" (the names given to server.WithReload):
//     plantstore_config_reload_failures_total{what}, its reloads that
//     failed and kept the old value; plantstore_config_last_reload_successful{what},
//     1 unless its last reload failed, 0 while what is in use is not what
//     its file holds (a token revoked in the file is still accepted); and
//     plantstore_config_last_reload_success_timestamp_seconds{what}, when
//     the value in use was read (its last good reload, or the start);
//   - plantstore_tls_handshake_errors_total, the failed TLS handshakes.
//
// They are s's own: registering those of a second Server with the same
// reg fails.
func Server(reg prometheus.Registerer, s *server.Server) error {
	reloads := func(result string, f func(server.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "plantstore_config_reloads_total",
			Help:        "Reloads of the certificate and the files of secrets (SIGHUP), by whether they kept an old value after an error.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(f(s.Stats())) })
	}
	return registerAll(reg, "server",
		reloads("success", func(st server.Stats) uint64 { return st.Reloads }),
		reloads("failure", func(st server.Stats) uint64 { return st.FailedReloads }),
		reloadedCollector{s},
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_tls_handshake_errors_total",
			Help: "TLS handshakes that failed on the API's listener.",
		}, func() float64 { return float64(s.Stats().TLSHandshakeErrors) }),
	)
}

var (
	reloadFailuresDesc = prometheus.NewDesc("plantstore_config_reload_failures_total",
		"Reloads (SIGHUP) of each thing re-read that failed and kept its old value.", []string{"what"}, nil)
	reloadSuccessfulDesc = prometheus.NewDesc("plantstore_config_last_reload_successful",
		"1 unless the last reload of the thing failed and kept its old value: then what is in use is not what its file holds.", []string{"what"}, nil)
	reloadSuccessTimeDesc = prometheus.NewDesc("plantstore_config_last_reload_success_timestamp_seconds",
		"When the value in use of the thing was read (its last good reload, or the start), in seconds since the Unix epoch.", []string{"what"}, nil)
)

// reloadedCollector reports the counts of each thing a Server reloads.
type reloadedCollector struct{ s *server.Server }

func (c reloadedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- reloadFailuresDesc
	ch <- reloadSuccessfulDesc
	ch <- reloadSuccessTimeDesc
}

func (c reloadedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.s.Stats().Reloaded {
		ok := 1.0
		if r.Failing {
			ok = 0
		}
		ch <- prometheus.MustNewConstMetric(reloadFailuresDesc, prometheus.CounterValue, float64(r.Failures), r.Name)
		ch <- prometheus.MustNewConstMetric(reloadSuccessfulDesc, prometheus.GaugeValue, ok, r.Name)
		ch <- prometheus.MustNewConstMetric(reloadSuccessTimeDesc, prometheus.GaugeValue, float64(r.LastSuccess.UnixNano())/1e9, r.Name)
	}
}

// LogWriter registers with reg plantstore_log_lines_dropped_total, the
// log lines lw dropped because its output did not take them in time
// ([server.LogWriter.Dropped]).
func LogWriter(reg prometheus.Registerer, lw *server.LogWriter) error {
	return registerAll(reg, "log",
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_log_lines_dropped_total",
			Help: "Log lines dropped because the log output (stderr) did not take them in time.",
		}, func() float64 { return float64(lw.Dropped()) }))
}

// registerAll registers every collector of cs with reg, or, when reg
// refuses one, none, so that the caller can try again.
func registerAll(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("promstats: register %s metrics: %w", what, err)
		}
	}
	return nil
}
