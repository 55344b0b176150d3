package server

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore/internal/logthrottle"
)

// A reloader is one thing Reload re-reads: the certificate of WithTLS, or
// one of WithReload.
type reloader struct {
	name   string
	reload func() (changed bool, err error)
	attrs  func() []slog.Attr // nil: none
	st     *reloadCounters    // set by Listen
}

// reloadCounters are what Stats reads of one reloader.
type reloadCounters struct {
	failures atomic.Uint64
	lastOK   atomic.Int64 // Unix nanoseconds
	failing  atomic.Bool
}

// Reload re-reads the certificate of [WithTLS] and calls the functions of
// [WithReload], in that order. Each that fails keeps its old value, and
// is logged at level Error as "reload: kept the old NAME" with err; then
// one line at level Info, "configuration reloaded", says with changed=
// and kept_after_error= which changed and which kept their old value
// (a comma-separated list, or none), and adds, for a certificate that
// changed, certificate_serial (hex) and certificate_expires, and the
// attributes of each changed one that has some. Secrets are never logged.
//
// Reloads never run two at a time: a Reload waits for the one under way.
// After [Server.Close], Reload does nothing. [Server.Serve] calls it at
// each signal of [WithReloadOn], SIGHUP by default; signals that come
// while a reload runs are taken all the same, and make one more reload
// once it ends (logged as "reload asked for during a reload: reloading
// again once it ends"). Each function of [WithReload] must return in
// bounded time: Serve and Close wait for a reload under way.
func (s *Server) Reload() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.reloadsOff {
		return
	}
	var changed, failed []string
	var attrs []slog.Attr
	for _, r := range s.reloaders {
		ok, err := r.reload()
		if err != nil {
			r.st.failures.Add(1)
		} else {
			r.st.lastOK.Store(time.Now().UnixNano())
		}
		r.st.failing.Store(err != nil)
		switch {
		case err != nil:
			failed = append(failed, r.name)
			s.logger.Error("reload: kept the old "+r.name, "err", err)
		case ok:
			changed = append(changed, r.name)
			if r.attrs != nil {
				attrs = append(attrs, r.attrs()...)
			}
		}
	}
	s.stats.reloaded(len(failed) == 0)
	attrs = append([]slog.Attr{
		slog.String("changed", listOrNone(changed)),
		slog.String("kept_after_error", listOrNone(failed)),
	}, attrs...)
	s.logger.LogAttrs(context.Background(), slog.LevelInfo, "configuration reloaded", attrs...)
}

// listOrNone returns the items of l separated by commas, or "none".
func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

// watch reloads s at each signal of reloadOn until ctx ends or the
// returned function is called; that function returns once a reload under
// way has ended. Signals keep being taken while a reload runs: those that
// come during one make one more reload once it ends (the files may have
// changed after it read them), logged so, and are never dropped.
func (s *Server) watch(ctx context.Context) (stop func()) {
	if s.reloadOn == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var running <-chan struct{} // closed when the reload under way ends; nil when none runs
		again := false
		for {
			select {
			case <-ctx.Done():
				if running != nil {
					<-running
				}
				return
			case <-s.reloadOn:
				if running == nil {
					running = s.reloadInBackground()
					continue
				}
				if !again {
					s.logger.Info("reload asked for during a reload: reloading again once it ends")
				}
				again = true
			case <-running:
				running = nil
				if again {
					again = false
					running = s.reloadInBackground()
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// reloadInBackground runs Reload in a goroutine of its own and returns a
// channel closed when it has ended.
func (s *Server) reloadInBackground() <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		s.Reload()
	}()
	return c
}

// Stats counts what an operator of a [Server] watches, for metrics
// (package promstats exports them to Prometheus) and alerts.
type Stats struct {
	// Reloads counts the reloads that kept no old value, and
	// FailedReloads those that kept one or more after an error.
	Reloads, FailedReloads uint64
	// LastReload is when the last reload that kept no old value ended,
	// or, before any, when [Listen] returned: the configuration a server
	// starts with is its first load.
	LastReload time.Time
	// LastReloadFailed reports whether the last reload kept an old value
	// after an error: what is in use is not what the files now hold.
	LastReloadFailed bool
	// Reloaded has the counts of each thing a reload re-reads: the
	// certificate of [WithTLS] ("certificate"), then those of
	// [WithReload], in the order given.
	Reloaded []ReloadedStats
	// TLSHandshakeErrors counts the TLS handshakes that failed on the
	// main listener: a client that offers no version or cipher the
	// server takes, does not trust its certificate, speaks plain HTTP
	// to it, or closes before its hello (as a load balancer's TCP check
	// does). A rise after a reload of the certificate says clients
	// refuse the new one.
	TLSHandshakeErrors uint64
}

// ReloadedStats are the counts of one thing a reload re-reads.
type ReloadedStats struct {
	// Name is "certificate", or the name given to [WithReload].
	Name string
	// Failures counts the reloads of it that failed and kept its old
	// value.
	Failures uint64
	// LastSuccess is when the value in use was read: the end of the last
	// reload of it that succeeded, or, before any, when [Listen]
	// returned.
	LastSuccess time.Time
	// Failing reports whether the last reload of it failed: the value in
	// use is not what its file now holds (a token revoked in the file may
	// still be accepted). The error line of that reload says why, and for
	// a token file which line was refused.
	Failing bool
}

// counters are what Stats reads.
type counters struct {
	reloads, failedReloads atomic.Uint64
	lastOK                 atomic.Int64 // Unix nanoseconds
	lastFailed             atomic.Bool
	tlsHandshakeErrors     atomic.Uint64
}

func (c *counters) reloaded(ok bool) {
	if ok {
		c.reloads.Add(1)
		c.lastOK.Store(time.Now().UnixNano())
	} else {
		c.failedReloads.Add(1)
	}
	c.lastFailed.Store(!ok)
}

// Stats returns the server's counts. It is safe to call at any time.
func (s *Server) Stats() Stats {
	reloaded := make([]ReloadedStats, len(s.reloaders))
	for i, r := range s.reloaders {
		reloaded[i] = ReloadedStats{
			Name:        r.name,
			Failures:    r.st.failures.Load(),
			LastSuccess: time.Unix(0, r.st.lastOK.Load()),
			Failing:     r.st.failing.Load(),
		}
	}
	return Stats{
		Reloaded:           reloaded,
		Reloads:            s.stats.reloads.Load(),
		FailedReloads:      s.stats.failedReloads.Load(),
		LastReload:         time.Unix(0, s.stats.lastOK.Load()),
		LastReloadFailed:   s.stats.lastFailed.Load(),
		TLSHandshakeErrors: s.stats.tlsHandshakeErrors.Load(),
	}
}

// errorLog returns the log.Logger net/http writes its complaints to: the
// server's logger at level Warn. With countTLS, the handshakes that
// failed, which net/http reports only there, as lines beginning "http:
// TLS handshake error" (TestTLSHandshakeErrorsCounted fails if a Go
// release changes that), are counted instead, and logged at level Debug
// as "TLS handshake failed", at most one line a minute and then a summary
// with how many were held back: a load balancer's TCP check or a port
// scan makes one at every connection.
func (s *Server) errorLog(countTLS bool) *log.Logger {
	l := slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)
	if !countTLS {
		return l
	}
	return log.New(&handshakeCounter{
		w:   l.Writer(),
		n:   &s.stats.tlsHandshakeErrors,
		log: slog.New(logthrottle.New(s.logger.Handler(), handshakeLogEvery)),
	}, "", 0)
}

// handshakeLogEvery is how often, at most, a failed TLS handshake is
// logged.
const handshakeLogEvery = time.Minute

// A handshakeCounter counts the lines of failed TLS handshakes that pass
// through it, logging them to log at level Debug, and passes the other
// lines on to w.
type handshakeCounter struct {
	w   io.Writer
	n   *atomic.Uint64
	log *slog.Logger
}

var tlsHandshakeError = []byte("http: TLS handshake error from ")

func (c *handshakeCounter) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, tlsHandshakeError) {
		return c.w.Write(p)
	}
	c.n.Add(1)
	ctx := context.Background()
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return len(p), nil
	}
	// "http: TLS handshake error from ADDR: ERR": no address holds ": ".
	from, why, _ := strings.Cut(string(bytes.TrimSpace(p[len(tlsHandshakeError):])), ": ")
	c.log.LogAttrs(ctx, slog.LevelDebug, "TLS handshake failed",
		slog.String("remote", from), slog.String("err", why))
	return len(p), nil
}
