package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

// claimRecorder records the limit of every Claim made of its Outbox.
type claimRecorder struct {
	plantstore.Outbox
	mu     sync.Mutex
	claims []int
}

func (c *claimRecorder) Claim(ctx context.Context, subscriber, owner string, until time.Time, limit int) ([]plantstore.Delivery, error) {
	c.mu.Lock()
	c.claims = append(c.claims, limit)
	c.mu.Unlock()
	return c.Outbox.Claim(ctx, subscriber, owner, until, limit)
}

// limits returns the limits of the claims made so far, in order.
func (c *claimRecorder) limits() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.claims)
}

// TestDownSubscriberIsProbed has a subscriber refuse every delivery while
// events keep coming, and checks that once some attempts in a row have
// failed the Dispatcher stops sending each event and sends one probe at a
// time, says so in its logs and metrics, and delivers every event once the
// subscriber is back. A second subscriber, gone, never comes back: it is
// no longer counted down once Run returns. The statistics are logged at
// the interval set.
func TestDownSubscriberIsProbed(t *testing.T) {
	t.Parallel()
	const n = 300
	rc, down := newDownReceiver(t)
	gone := newReceiver(t, refuse)
	mo := webhook.NewMemoryOutbox()
	claims := &claimRecorder{Outbox: mo}
	d, l, stop := start(t, claims, []string{rc.url(), gone.url()}, webhook.WithStatsInterval(20*time.Millisecond))
	ps := newPlantStore(mo, d)
	mustCreate(t, ps, plantstore.NewPlant{ID: 0, Name: "p"})
	testkit.WaitUntil(t, time.Minute, "both subscribers to be taken as down", func() bool {
		return testkit.Logged(l.String(), "webhook: subscriber down: deliveries paused but for one probe at a time") == 2
	})
	if got := float64(d.Stats().SubscribersDown); got != 2 {
		t.Errorf("plantstore_webhook_subscribers_down = %v while down, want 2", got)
	}
	createRange(t, ps, 1, n)
	testkit.WaitUntil(t, time.Minute, "the statistics line", func() bool {
		return strings.Contains(l.String(), fmt.Sprintf(`msg="webhook: outbox" depth=%d delivered=0`, n))
	})
	atDown := rc.total()
	testkit.WaitUntil(t, time.Minute, "five probes", func() bool { return rc.total() >= atDown+5 })
	// While the subscribers are down, the Dispatcher claims one delivery at
	// a time, its probe, and only when the probe is due.
	mark := len(claims.limits())
	testkit.WaitUntil(t, time.Minute, "three more claims", func() bool { return len(claims.limits()) >= mark+3 })
	if limits := claims.limits()[mark:]; slices.ContainsFunc(limits, func(l int) bool { return l != 1 }) {
		t.Errorf("claim limits while the subscribers are down = %v, want only 1 (one probe at a time)", limits)
	}

	down.Store(false)
	rc.waitDelivered(t, n)
	if _, delivered := rc.stats(); !onceEach(n)(delivered) {
		t.Errorf("deliveries by webhook-id = %v, want each of %d once", delivered, n)
	}
	if !strings.Contains(l.String(), "webhook: subscriber up again") {
		t.Errorf("no line saying the subscriber is up again in the logs:\n%s", l)
	}
	if got := float64(d.Stats().SubscribersDown); got != 1 {
		t.Errorf("plantstore_webhook_subscribers_down = %v once one is back, want 1", got)
	}
	stop()
	if got := float64(d.Stats().SubscribersDown); got != 0 {
		t.Errorf("plantstore_webhook_subscribers_down = %v once Run returned, want 0", got)
	}
}

// TestBoundedSQLOutboxWithADeadSubscriber keeps a SQLite outbox to ten
// events while its only subscriber refuses everything, and checks that
// the older events are dropped, counted and logged, and that the ten
// newest are delivered once the subscriber is back.
func TestBoundedSQLOutboxWithADeadSubscriber(t *testing.T) {
	t.Parallel()
	const n, bound = 60, 10
	rc, down := newDownReceiver(t)
	s := openSQLite(t, filepath.Join(t.TempDir(), "plants.db"), sqlstore.WithOutboxMaxPending(bound))
	d, l, _ := start(t, s, []string{rc.url()})
	createRange(t, notifying(s, d), 0, n)
	testkit.WaitUntil(t, time.Minute, "the outbox to drop the events past its bound", func() bool {
		return float64(d.Stats().Dropped) == n-bound
	})
	if got := pending(t, d); got != bound {
		t.Errorf("plantstore_webhook_outbox_depth = %v, want %d", got, bound)
	}
	if !strings.Contains(l.String(), "webhook: outbox full: dropped the oldest pending events") {
		t.Errorf("no line about the dropped events in the logs:\n%s", l)
	}
	// A delivery claimed before its event was dropped may still be made.
	// Once the subscriber is taken as down and two probes were made, one
	// after the other with nothing else held, every delivery claimed
	// before the drops has ended, so that only the newest events are left.
	l.waitDown(t)
	atDown := rc.total()
	testkit.WaitUntil(t, time.Minute, "two probes", func() bool { return rc.total() >= atDown+2 })

	down.Store(false)
	testkit.WaitUntil(t, time.Minute, "the newest events to be delivered", func() bool { return pending(t, s) == 0 })
	if diff := cmp.Diff(idRange(n-bound, n), rc.ids(t, true)); diff != "" {
		t.Errorf("plants delivered once the subscriber is back (-want +got):\n%s", diff)
	}
}

// TestMaxAgeCountsOnlyFailuresWhileUp lets events grow older than the max
// age while their subscriber is down, and checks that failed probes
// abandon none of them; then has the subscriber come back refusing one
// event only, and checks that this one is abandoned and the others
// delivered.
func TestMaxAgeCountsOnlyFailuresWhileUp(t *testing.T) {
	t.Parallel()
	const n, maxAge = 20, 500 * time.Millisecond
	var refuseOne atomic.Bool // else refuse everything
	var rc *receiver
	rc = newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		if !refuseOne.Load() {
			return http.StatusServiceUnavailable
		}
		rc.mu.Lock()
		body := rc.bodies[r.Header.Get(webhook.HeaderID)]
		rc.mu.Unlock()
		if strings.Contains(body, `"id":0,`) {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	mo := webhook.NewMemoryOutbox()
	d, l, _ := start(t, mo, []string{rc.url()}, webhook.WithMaxAge(maxAge))
	ps := newPlantStore(mo, d)
	created := time.Now()
	createRange(t, ps, 0, n)
	l.waitDown(t)
	testkit.WaitUntil(t, time.Minute, "the events to pass the max age", func() bool { return time.Since(created) > maxAge })
	atOld := rc.total()
	testkit.WaitUntil(t, time.Minute, "five probes of events past the max age", func() bool { return rc.total() >= atOld+5 })
	if got := float64(d.Stats().Abandoned); got != 0 {
		t.Errorf("plantstore_webhook_abandoned_total = %v after failed probes, want 0:\n%s", got, l)
	}
	if got := mo.Len(); got != n {
		t.Errorf("outbox holds %d events while the subscriber is down, want %d", got, n)
	}

	refuseOne.Store(true)
	testkit.WaitUntil(t, time.Minute, "the refused event to be abandoned", func() bool {
		return float64(d.Stats().Abandoned) == 1
	})
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })
	if diff := cmp.Diff(idRange(1, n), rc.ids(t, true)); diff != "" {
		t.Errorf("plants delivered once the subscriber is back (-want +got):\n%s", diff)
	}
}
