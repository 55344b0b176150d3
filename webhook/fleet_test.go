package webhook_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestExpiredLeaseGoesToAnotherDispatcher has a Dispatcher claim a
// delivery it cannot finish, renew or claim again, and checks that another
// Dispatcher sharing the outbox delivers it once the lease expires.
func TestExpiredLeaseGoesToAnotherDispatcher(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var stuck atomic.Int64
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, attempt int) int {
		if attempt == 1 {
			stuck.Add(1)
			select { // the first Dispatcher's attempt hangs
			case <-release:
			case <-r.Context().Done():
			}
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	defer close(release)
	mo := webhook.NewMemoryOutbox()
	opts := []webhook.Option{webhook.WithLease(300 * time.Millisecond), webhook.WithAttemptTimeout(time.Minute)}
	// The first Dispatcher is cut off from the outbox once it has claimed
	// the delivery: it can neither renew its lease nor claim again.
	d1, _, _ := start(t, &deadOutbox{Outbox: mo, dieAtClaim: true}, []string{rc.url()}, opts...)
	mustCreate(t, newPlantStore(mo, d1), plantstore.NewPlant{ID: 1, Name: "Monstera"})
	testkit.WaitUntil(t, time.Minute, "the first attempt to hang", func() bool { return stuck.Load() == 1 })

	start(t, mo, []string{rc.url()}, opts...)
	rc.waitDelivered(t, 1) // by the second Dispatcher
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })
}

// TestStats fails the first attempt of three events to a live
// subscriber, and abandons them for two others, one answering 500 and one
// redirecting to a receiver of its own, which is not followed; Stats
// counts it all.
func TestStats(t *testing.T) {
	t.Parallel()
	live := newReceiver(t, func(_ http.ResponseWriter, _ *http.Request, attempt int) int {
		if attempt == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	// The failing subscribers answer only once the events are past the
	// max age, so that each is abandoned at its first failure, while the
	// subscriber is up: ten failures in a row would take it as down, and
	// a failure then never abandons.
	const maxAge = 200 * time.Millisecond
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	failing := newReceiver(t, func(http.ResponseWriter, *http.Request, int) int {
		<-release
		return http.StatusInternalServerError
	})
	target := newReceiver(t, ok)
	redirect := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) int {
		<-release
		w.Header().Set("Location", target.url())
		return http.StatusTemporaryRedirect
	})
	mo := webhook.NewMemoryOutbox()
	d, l, stop := start(t, mo, []string{live.url(), failing.url(), redirect.url()}, webhook.WithMaxAge(maxAge))
	ps := newPlantStore(mo, d)
	created := time.Now()
	createRange(t, ps, 0, 3)
	if got := pending(t, d); got < 1 || got > 3 {
		t.Errorf("outbox depth after 3 creates = %v, want 1 to 3", got)
	}
	time.Sleep(maxAge - time.Since(created)) // the events must grow older than maxAge: the sleep is the scenario
	releaseOnce()
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })
	stop()

	failed := 0
	for name, rc := range map[string]*receiver{"live": live, "failing": failing, "redirecting": redirect} {
		attempts, delivered := rc.stats()
		for _, n := range attempts {
			failed += n - 1
		}
		if rc != live {
			failed += len(attempts)
			if !onceEach(3)(attempts) || len(delivered) != 0 {
				t.Errorf("%s subscriber: attempts %v, delivered %v; want one attempt of each of 3 ids, none delivered", name, attempts, delivered)
			}
		} else if !onceEach(3)(delivered) {
			t.Errorf("live deliveries %v, want each of 3 once", delivered)
		}
	}
	want := webhook.Stats{Delivered: 3, FailedAttempts: uint64(failed), Abandoned: 6, CanDrop: true}
	if diff := cmp.Diff(want, d.Stats()); diff != "" {
		t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
	}
	if got := pending(t, d); got != 0 {
		t.Errorf("outbox depth at the end = %v, want 0", got)
	}
	if attempts, _ := target.stats(); len(attempts) != 0 {
		t.Errorf("redirect target received %v, want nothing", attempts)
	}
	if !strings.Contains(l.String(), "status 307") {
		t.Errorf("logs do not report the 307:\n%s", l)
	}
	if got := testkit.Logged(l.String(), "webhook: delivery abandoned after max age"); got != 6 {
		t.Errorf("logged %d abandonments, want 6:\n%s", got, l)
	}
}
