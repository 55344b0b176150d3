package promstats_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/server"
)

// TestServer reloads a server once with success and once with a failure,
// and checks the series after each, those of each thing reloaded among
// them: the failure is counted for tokens, which is marked failing with
// the time of its last good load kept; without TLS, the handshake errors
// stay at 0.
func TestServer(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	reload := make(chan os.Signal)
	s, err := server.Listen("127.0.0.1:0", server.WithLogger(slog.New(slog.DiscardHandler)), server.WithReloadOn(reload),
		server.WithReload("tokens", func() (bool, error) {
			if fail.Load() {
				return false, io.ErrUnexpectedEOF
			}
			return true, nil
		}, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Serve(ctx, http.NotFoundHandler())

	reg := prometheus.NewRegistry()
	if err := promstats.Server(reg, s); err != nil {
		t.Fatal(err)
	}
	started := float64(s.Stats().LastReload.UnixNano()) / 1e9
	want := map[string]float64{
		`plantstore_config_reloads_total{result="success"}`:                      0,
		`plantstore_config_reloads_total{result="failure"}`:                      0,
		`plantstore_config_reload_failures_total{what="tokens"}`:                 0,
		`plantstore_config_last_reload_successful{what="tokens"}`:                1,
		`plantstore_config_last_reload_success_timestamp_seconds{what="tokens"}`: started,
		"plantstore_tls_handshake_errors_total{}":                                0,
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_")); diff != "" {
		t.Errorf("series before any reload (-want +got):\n%s", diff)
	}

	reload <- os.Interrupt
	testkit.WaitUntil(t, 30*time.Second, "the first reload", func() bool { return s.Stats().Reloads == 1 })
	good := series(t, reg, "plantstore_")[`plantstore_config_last_reload_success_timestamp_seconds{what="tokens"}`]
	if good <= started {
		t.Errorf("last success at %v after a good reload, want after the start's %v", good, started)
	}
	fail.Store(true)
	reload <- os.Interrupt
	testkit.WaitUntil(t, 30*time.Second, "the second reload", func() bool { return s.Stats().FailedReloads == 1 })
	got := series(t, reg, "plantstore_")
	want[`plantstore_config_reloads_total{result="success"}`] = 1
	want[`plantstore_config_reloads_total{result="failure"}`] = 1
	want[`plantstore_config_reload_failures_total{what="tokens"}`] = 1
	want[`plantstore_config_last_reload_successful{what="tokens"}`] = 0
	want[`plantstore_config_last_reload_success_timestamp_seconds{what="tokens"}`] = good
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series after a good reload and a failed one (-want +got):\n%s", diff)
	}
	// All or nothing: a second registration fails and leaves the first.
	if err := promstats.Server(reg, s); err == nil {
		t.Error("Server registering the same names twice = nil error")
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_")); diff != "" {
		t.Errorf("series after a refused registration (-want +got):\n%s", diff)
	}
}

// TestLogWriter checks that the dropped lines of a LogWriter are counted.
func TestLogWriter(t *testing.T) {
	t.Parallel()
	lw := server.NewLogWriter(refusingWriter{})
	reg := prometheus.NewRegistry()
	if err := promstats.LogWriter(reg, lw); err != nil {
		t.Fatal(err)
	}
	io.WriteString(lw, "one\n")
	io.WriteString(lw, "two\n")
	lw.Close()
	want := map[string]float64{"plantstore_log_lines_dropped_total{}": 2}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_log_")); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

// refusingWriter refuses every write, as a closed stderr does.
type refusingWriter struct{}

func (refusingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }
