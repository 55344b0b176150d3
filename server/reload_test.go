package server_test

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// A fakeReload is the reload function of something a host re-reads: it
// reports the outcome the test sets next, and counts its calls.
type fakeReload struct {
	mu      sync.Mutex
	changed bool
	err     error
	calls   int
}

func (f *fakeReload) set(changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed, f.err = changed, err
}

func (f *fakeReload) reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.changed, f.err
}

// TestReloadLogsWhatChanged checks the lines a reload writes, byte for
// byte as the plantstore binary has always written them: one error line
// for each reload that kept its old value, then one line saying what
// changed and what did not, with the attributes of what changed. And it
// checks the stats of each thing reloaded: a failure counts, marks it
// failing and keeps the time of its last success; a success, changed or
// not, clears it and moves that time on.
func TestReloadLogsWhatChanged(t *testing.T) {
	t.Parallel()
	tokens, secret := &fakeReload{}, &fakeReload{}
	reload := make(chan os.Signal)
	srv := start(t, http.NotFoundHandler(), server.WithReloadOn(reload),
		server.WithReload("tokens", tokens.reload, func() []slog.Attr { return []slog.Attr{slog.Int("tokens", 3)} }),
		server.WithReload("webhook secret", secret.reload, func() []slog.Attr { return []slog.Attr{slog.String("never", "logged")} }))
	steps := []struct {
		name                    string
		tokens, secret          error
		tokensChange, secretChg bool
		want                    string
	}{
		{name: "nothing changed",
			want: `level=INFO msg="configuration reloaded" changed=none kept_after_error=none` + "\n"},
		{name: "tokens changed, the secret failed", tokensChange: true, secret: errors.New("webhook: invalid secret: too short"),
			want: `level=ERROR msg="reload: kept the old webhook secret" err="webhook: invalid secret: too short"` + "\n" +
				`level=INFO msg="configuration reloaded" changed=tokens kept_after_error="webhook secret" tokens=3` + "\n"},
		{name: "both failed", tokens: errors.New("token file: gone"), secret: errors.New("weak"),
			want: `level=ERROR msg="reload: kept the old tokens" err="token file: gone"` + "\n" +
				`level=ERROR msg="reload: kept the old webhook secret" err=weak` + "\n" +
				`level=INFO msg="configuration reloaded" changed=none kept_after_error="tokens,webhook secret"` + "\n"},
		{name: "the secret changed", secretChg: true,
			want: `level=INFO msg="configuration reloaded" changed="webhook secret" kept_after_error=none never=logged` + "\n"},
	}
	if st := srv.Stats().Reloaded; len(st) != 2 || st[0].Name != "tokens" || st[1].Name != "webhook secret" ||
		st[0].LastSuccess.IsZero() || st[1].LastSuccess.IsZero() || st[0].Failing || st[1].Failing {
		t.Fatalf("Stats().Reloaded at start = %+v, want tokens then webhook secret, loaded, none failing", st)
	}
	for i, step := range steps {
		tokens.set(step.tokensChange, step.tokens)
		secret.set(step.secretChg, step.secret)
		before, prev := len(srv.logs.String()), srv.Stats().Reloaded
		srv.reloadOn(t, reload, i+1)
		if diff := cmp.Diff(step.want, srv.logs.String()[before:]); diff != "" {
			t.Errorf("%s: log lines (-want +got):\n%s", step.name, diff)
		}
		for j, r := range srv.Stats().Reloaded {
			failed := []error{step.tokens, step.secret}[j] != nil
			if r.Failing != failed || r.LastSuccess.Equal(prev[j].LastSuccess) != failed || r.LastSuccess.Before(prev[j].LastSuccess) {
				t.Errorf("%s: %s = %+v, want failing: %v, and its last success, %v, moved on unless failing", step.name, r.Name, r, failed, prev[j].LastSuccess)
			}
		}
	}
	want := server.Stats{Reloads: 2, FailedReloads: 2, Reloaded: []server.ReloadedStats{
		{Name: "tokens", Failures: 1}, {Name: "webhook secret", Failures: 2}}}
	got := srv.Stats()
	if diff := cmp.Diff(want, got, cmpIgnoreTime); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

// cmpIgnoreTime leaves Stats.LastReload out of a comparison.
var cmpIgnoreTime = cmp.FilterPath(func(p cmp.Path) bool {
	return p.String() == "LastReload" || p.String() == "Reloaded.LastSuccess"
}, cmp.Ignore())

// TestNoReloadAfterClose checks that Close waits for a reload under way,
// so that nothing logs after it, and that Reload then does nothing.
func TestNoReloadAfterClose(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	srv, logs := listen(t, server.WithReload("tokens", func() (bool, error) {
		calls++
		if calls == 1 {
			close(entered)
			<-release
		}
		return true, nil
	}, nil))
	go srv.Reload()
	<-entered
	var mu sync.Mutex
	var events []string
	note := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		srv.Close()
		note("closed; reload lines: " + string(rune('0'+testkit.Logged(logs.String(), "configuration reloaded"))))
	}()
	// Close takes the listeners down before it waits for the reload.
	testkit.WaitUntil(t, wait, "Close to close the listener", func() bool { return refused(srv.Addr().String()) })
	note("released")
	close(release)
	<-closed
	if diff := cmp.Diff([]string{"released", "closed; reload lines: 1"}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	srv.Reload()
	if calls != 1 || testkit.Logged(logs.String(), "configuration reloaded") != 1 {
		t.Errorf("Reload after Close called the reload function %d times in all and logged:\n%s", calls, logs)
	}
}

// TestSignalDuringReloadReloadsAgain checks that signals that come while
// a reload runs are taken at once, even from an unbuffered channel, and
// make one more reload once it ends, with a line saying so: none is
// dropped, and a burst costs one reload, not one each.
func TestSignalDuringReloadReloadsAgain(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	calls := 0
	reload := make(chan os.Signal)
	srv := start(t, http.NotFoundHandler(), server.WithReloadOn(reload),
		server.WithReload("tokens", func() (bool, error) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				close(entered)
				<-release
			}
			return true, nil
		}, nil))
	reload <- os.Interrupt
	<-entered
	for i := range 3 {
		select {
		case reload <- os.Interrupt:
		case <-time.After(wait):
			t.Fatalf("signal %d during the reload not taken in %v", i+2, wait)
		}
	}
	close(release)
	testkit.WaitUntil(t, wait, "the second reload", func() bool { return srv.Stats().Reloads == 2 })
	// Serve returns once the reload under way has ended: no other follows.
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Errorf("%d reloads, want 2: the first, and one for the three signals during it", calls)
	}
	if n := testkit.Logged(srv.logs.String(), "reload asked for during a reload: reloading again once it ends"); n != 1 {
		t.Errorf("%d lines saying a reload follows, want 1:\n%s", n, srv.logs)
	}
}
