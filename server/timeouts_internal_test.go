package server

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
)

// TestDeadlinesInNetHTTPTerms checks what Timeouts make of the
// http.Servers that Serve runs: the write deadline is Read + Handler +
// Write or none, a zero Idle is none (net/http's -1), the main listener
// reads headers to twice the handler's limit, the metrics listener to 64
// KiB.
func TestDeadlinesInNetHTTPTerms(t *testing.T) {
	t.Parallel()
	type deadlines struct {
		ReadHeader, Read, Write, Idle time.Duration
		HeaderBytes                   int
	}
	tests := []struct {
		name        string
		t           Timeouts
		headerBytes int
		want        deadlines
	}{
		{"defaults", DefaultTimeouts, DefaultMaxHeaderBytes,
			deadlines{10 * time.Second, 10 * time.Second, 45 * time.Second, 120 * time.Second, 128 << 10}},
		{"each set", Timeouts{ReadHeader: 10 * time.Second, Read: 2 * time.Second, Handler: 3 * time.Second, Write: 4 * time.Second, Idle: time.Minute}, 1000,
			deadlines{10 * time.Second, 2 * time.Second, 9 * time.Second, time.Minute, 2000}},
		{"none", Timeouts{Handler: 5 * time.Second}, DefaultMaxHeaderBytes,
			deadlines{0, 0, 0, -1, 128 << 10}},
		{"no header or write bound", Timeouts{Read: 10 * time.Second, Idle: 120 * time.Second, Handler: 5 * time.Second}, DefaultMaxHeaderBytes,
			deadlines{0, 10 * time.Second, 0, 120 * time.Second, 128 << 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Listen("127.0.0.1:0", WithTimeouts(tt.t), WithMaxHeaderBytes(tt.headerBytes),
				WithMetrics("127.0.0.1:0", nil), WithReloadOn(nil), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go s.Serve(ctx, http.NotFoundHandler())
			var api, metrics *http.Server
			testkit.WaitUntil(t, time.Minute, "Serve to make its servers", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				api, metrics = s.api, s.metrics
				return api != nil
			})
			got := deadlines{api.ReadHeaderTimeout, api.ReadTimeout, api.WriteTimeout, api.IdleTimeout, api.MaxHeaderBytes}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("main listener's http.Server (-want +got):\n%s", diff)
			}
			tt.want.HeaderBytes = 64 << 10
			got = deadlines{metrics.ReadHeaderTimeout, metrics.ReadTimeout, metrics.WriteTimeout, metrics.IdleTimeout, metrics.MaxHeaderBytes}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("metrics listener's http.Server (-want +got):\n%s", diff)
			}
		})
	}
	if DefaultTimeouts.Handler != sqlstore.DefaultTimeout {
		t.Errorf("DefaultTimeouts.Handler = %v, want sqlstore's default timeout, %v", DefaultTimeouts.Handler, sqlstore.DefaultTimeout)
	}
}
