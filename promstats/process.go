package promstats

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

// A ProcessOption configures [Process].
type ProcessOption func(*processConfig)

type processConfig struct {
	version, revision string
}

// WithBuild names the build where the go command stamps nothing: a
// binary built with -buildvcs=false, or from a source archive without
// .git, whose version and commit were given to the linker
// (-ldflags "-X main.buildVersion=v1.2.0 -X main.buildCommit=…", as
// cmd/plantstore takes them). Either left "" is read from the binary.
func WithBuild(version, revision string) ProcessOption {
	return func(c *processConfig) { c.version, c.revision = version, revision }
}

// Process registers with reg what deploy/'s dashboard and alerts read of
// the process that serves plantstore, as the cmd/plantstore binary
// serves them:
//
//   - plantstore_build_info{version, revision, goversion}, always 1:
//     plantstore's module version ("(devel)" for a build from a work
//     tree), the commit it was built from ("unknown" when nothing stamped
//     one), and the Go toolchain's version. In a host's binary they are
//     the plantstore module the host requires, not the host's own;
//   - the Go runtime's collector (go_*) and the process's (process_*),
//     client_golang's, which the dashboard's uptime, CPU, memory, file
//     and goroutine panels read.
//
// A reg that already has the Go or process collector, as
// prometheus.DefaultRegisterer does, keeps its own.
func Process(reg prometheus.Registerer, opts ...ProcessOption) error {
	var c processConfig
	for _, o := range opts {
		o(&c)
	}
	id := buildinfo.Read(c.version, c.revision)
	if id.Revision == "" {
		id.Revision = "unknown"
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "plantstore_build_info",
		Help:        "Always 1; the labels say which build of plantstore is running.",
		ConstLabels: prometheus.Labels{"version": id.Version, "revision": id.Revision, "goversion": runtime.Version()},
	})
	build.Set(1)
	for _, c := range []prometheus.Collector{
		build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if _, err := register(reg, c); err != nil {
			return err
		}
	}
	return nil
}
