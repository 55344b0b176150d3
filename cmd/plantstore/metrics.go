package main

import (
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsPath is where the binary serves its metrics, in the Prometheus
// text format: on -metrics-addr without a token, or on -addr behind the
// API's tokens unless -metrics-public.
const metricsPath = "/metrics"

// newRegistry returns the binary's own registry, holding its build
// information and the Go runtime's and the process's collectors. The
// library's collectors join it through the options given to httpapi and
// sqlstore; nothing is registered with prometheus.DefaultRegisterer.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "plantstore_build_info",
		Help:        "Always 1; the labels say which build of plantstore is running.",
		ConstLabels: buildLabels(),
	})
	build.Set(1)
	reg.MustRegister(
		build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// buildLabels reads the binary's version and VCS revision as -version
// does (see buildIdentity). A binary built from a work tree has version
// "(devel)"; one built without VCS stamping (-buildvcs=false) and without
// -ldflags "-X main.buildCommit=…" has revision "unknown".
func buildLabels() prometheus.Labels {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	v, rev, _ := buildIdentity(bi, buildVersion, buildCommit)
	if rev == "" {
		rev = "unknown"
	}
	return prometheus.Labels{"version": v, "revision": rev, "goversion": runtime.Version()}
}

// metricsHandler serves reg's metrics.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
