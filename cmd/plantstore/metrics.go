package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plantstore/plantstore/promstats"
)

// metricsPath is where the binary serves its metrics, in the Prometheus
// text format: on -metrics-addr without a token, or on -addr behind the
// API's tokens unless -metrics-public.
const metricsPath = "/metrics"

// newRegistry returns the binary's own registry, with what
// [promstats.Process] registers (plantstore_build_info with the linker's
// buildVersion and buildCommit, the runtime's and the process's collectors).
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if err := promstats.Process(reg, promstats.WithBuild(buildVersion, buildCommit)); err != nil {
		panic(err) // a new registry refuses none of them
	}
	return reg
}

// metricsHandler serves reg's metrics.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
