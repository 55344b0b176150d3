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
//   - plantstore_config_last_reload_successful, 1 unless the last reload
//     kept an old value: what is in use is not what the files hold;
//   - plantstore_config_last_reload_success_timestamp_seconds, the end of
//     the last reload that kept no old value, or the server's start;
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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plantstore_config_last_reload_successful",
			Help: "1 unless the last reload kept an old value after an error.",
		}, func() float64 {
			if s.Stats().LastReloadFailed {
				return 0
			}
			return 1
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plantstore_config_last_reload_success_timestamp_seconds",
			Help: "When the last reload that kept no old value ended, or the server started, in seconds since the Unix epoch.",
		}, func() float64 { return float64(s.Stats().LastReload.UnixNano()) / 1e9 }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_tls_handshake_errors_total",
			Help: "TLS handshakes that failed on the API's listener.",
		}, func() float64 { return float64(s.Stats().TLSHandshakeErrors) }),
	)
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
