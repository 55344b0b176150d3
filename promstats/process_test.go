package promstats_test

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plantstore/plantstore/promstats"
)

// buildInfo gathers reg and returns the labels of its one
// plantstore_build_info series, and the families it holds.
func buildInfo(t *testing.T, reg *prometheus.Registry) (map[string]string, map[string]bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	var labels map[string]string
	for _, mf := range mfs {
		families[mf.GetName()] = true
		if mf.GetName() != "plantstore_build_info" {
			continue
		}
		if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("plantstore_build_info = %v, want one series at 1", mf.GetMetric())
		}
		labels = map[string]string{}
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
	}
	return labels, families
}

// TestProcess checks what deploy/'s dashboard and alerts need of a
// process: plantstore_build_info with the build's version, revision and
// Go version, the linker's when given, and the Go runtime's and the
// process's collectors; and that a registry that has those collectors
// already, as the default one does, keeps them.
func TestProcess(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if err := promstats.Process(reg, promstats.WithBuild("v1.4.0", "0123456789ab")); err != nil {
		t.Fatal(err)
	}
	labels, families := buildInfo(t, reg)
	want := map[string]string{"version": "v1.4.0", "revision": "0123456789ab", "goversion": runtime.Version()}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("plantstore_build_info's labels (-want +got):\n%s", diff)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_start_time_seconds", "process_resident_memory_bytes"} {
		if !families[name] {
			t.Errorf("no family %s", name)
		}
	}

	// As a test binary, unstamped: "(devel)" or the module's version,
	// and a revision, "unknown" at worst.
	own := prometheus.NewRegistry()
	own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for range 2 {
		if err := promstats.Process(own); err != nil {
			t.Fatalf("Process on a registry with the runtime's collectors = %v, want nil", err)
		}
	}
	labels, _ = buildInfo(t, own)
	if labels["version"] == "" || labels["revision"] == "" || labels["goversion"] != runtime.Version() {
		t.Errorf("plantstore_build_info's labels = %v, want a version, a revision and %s", labels, runtime.Version())
	}
}
