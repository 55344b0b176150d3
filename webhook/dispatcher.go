package webhook

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore"
)

// A Dispatcher delivers the events of a [plantstore.Outbox] to every
// subscriber given to [New].
//
// Dispatchers in several processes may share one durable outbox: each
// claims deliveries with a lease (see [plantstore.Outbox]), so that each
// event reaches each subscriber once while every process lives, and at
// least once when one dies: its claimed deliveries are claimed by another
// Dispatcher once their leases expire. Receivers drop repeated
// webhook-ids.
//
// Each subscriber is served on its own: it has its own deliveries, its
// own retries and a pool of at most [WithConcurrency] attempts, so a slow
// or dead subscriber delays neither creates nor deliveries to other
// subscribers. A 2xx response ends the delivery; any other outcome is
// recorded in the outbox and retried with backoff, by whichever
// Dispatcher claims it when it is due, until [WithMaxAge].
type Dispatcher struct {
	source plantstore.Outbox
	cfg    config
	// key is the signing key, swapped whole by SetSecret.
	key    atomic.Pointer[[]byte]
	log    *slog.Logger
	owner  string   // this run's name in the leases it takes, its own
	keys   []string // the subscribers' keys in the outbox
	subs   []*subscriber
	wake   chan struct{}
	counts counters

	// dropper is the outbox, when it drops events to stay within a bound
	// and leaves logging them to the Dispatcher; see logDrops.
	dropper dropper
	drops   dropLog

	mu      sync.Mutex
	running bool
	stopped bool               // Stop was called
	cancel  context.CancelFunc // ends Run's context; nil until Run
	done    chan struct{}      // closed as Run returns
}

// A dropper is an outbox that can drop events undelivered to stay within
// a bound, and counts them: a [*MemoryOutbox], or a
// [github.com/plantstore/plantstore/sqlstore.Store], which drops none
// unless opened with WithOutboxMaxPending.
type dropper interface {
	// Dropped returns the number of events dropped, ever.
	Dropped() uint64
}

// ErrRunning reports a second call of [Dispatcher.Run].
var ErrRunning = errors.New("webhook: dispatcher already ran")

// New returns a Dispatcher that delivers the events of source to
// subscribers, the absolute http or https URLs every event is POSTed to,
// signed with secret: raw key bytes, or "whsec_" followed by the key in
// base64; at least [MinKeyBytes] bytes of key either way. Every
// Dispatcher sharing one outbox must list the same subscribers.
//
// Errors: [ErrSecret] for an unusable secret, one with a key shorter than
// [MinKeyBytes] included; an error when there are no subscribers, a
// subscriber is not an absolute http or https URL, a duration or count
// given to an [Option] is negative.
func New(source plantstore.Outbox, subscribers []string, secret []byte, opts ...Option) (*Dispatcher, error) {
	if source == nil {
		return nil, errors.New("webhook: nil outbox")
	}
	if err := CheckSecret(secret); err != nil {
		return nil, err
	}
	key, _ := signingKey(secret)
	if len(subscribers) == 0 {
		return nil, errors.New("webhook: no subscribers")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.client == nil {
		cfg.client = defaultClient(cfg.concurrency)
	}
	d := &Dispatcher{
		source: source,
		cfg:    cfg,
		log:    cfg.logger,
		wake:   make(chan struct{}, 1),
	}
	d.key.Store(&key)
	if d.log == nil {
		d.log = slog.Default()
	}
	d.owner = "dispatcher_" + rand.Text()
	if cfg.instance != "" {
		d.owner = cfg.instance + runSep + rand.Text()[:16]
	}
	if err := d.addSubscribers(subscribers); err != nil {
		return nil, err
	}
	if dr, ok := source.(dropper); ok {
		if _, ok := source.(*MemoryOutbox); !ok {
			// A MemoryOutbox logs its drops as it makes them.
			d.dropper = dr
		}
	}
	return d, nil
}

// setDefaults gives every duration and count of c left at zero its
// default, and refuses a negative one.
func (c *config) setDefaults() error {
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"attempt timeout", &c.attemptTimeout, DefaultAttemptTimeout},
		{"initial backoff", &c.initialBackoff, DefaultInitialBackoff},
		{"max backoff", &c.maxBackoff, DefaultMaxBackoff},
		{"max age", &c.maxAge, DefaultMaxAge},
		{"poll interval", &c.pollInterval, DefaultPollInterval},
		{"lease", &c.lease, DefaultLease},
		{"heartbeat", &c.heartbeat, DefaultHeartbeat},
		{"stats interval", &c.statsInterval, DefaultStatsInterval},
	} {
		switch {
		case *f.v < 0:
			return fmt.Errorf("webhook: negative %s", f.name)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if c.maxBackoff < c.initialBackoff {
		c.maxBackoff = c.initialBackoff
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"concurrency", &c.concurrency, DefaultConcurrency},
		{"max in flight", &c.maxInFlight, DefaultMaxInFlight},
	} {
		switch {
		case *f.v < 0:
			return fmt.Errorf("webhook: negative %s", f.name)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return nil
}

// addSubscribers gives d a subscriber for each URL of subscribers, which
// must be absolute http or https URLs, each listed once.
func (d *Dispatcher) addSubscribers(subscribers []string) error {
	seen := map[string]bool{}
	for i, raw := range subscribers {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			return fmt.Errorf("webhook: subscriber %d: malformed URL", i)
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("webhook: subscriber %d: scheme must be http or https", i)
		case u.Hostname() == "":
			return fmt.Errorf("webhook: subscriber %d: URL has no host", i)
		}
		k := SubscriberKey(raw)
		if seen[k] {
			return fmt.Errorf("webhook: subscriber %d: listed twice", i)
		}
		seen[k] = true
		d.keys = append(d.keys, k)
		d.subs = append(d.subs, newSubscriber(d, i, raw, k, u.Scheme+"://"+u.Host))
	}
	return nil
}

// SubscriberKey returns the key under which an outbox keeps the deliveries
// to the subscriber at rawURL: a hash of the URL, so that the outbox holds
// no credentials the URL may carry, and every process that lists the same
// URL finds the same deliveries.
func SubscriberKey(rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return "sha256_" + hex.EncodeToString(sum[:16])
}

func defaultClient(concurrency int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// SetSecret makes d sign with secret, a secret [New] would accept, from
// now on: every attempt that starts after SetSecret returns is signed with
// it, while an attempt already sent keeps the signature it went with. It
// lets a program rotate the secret without stopping delivery; receivers
// that verify with the old secret only refuse the attempts signed after
// the swap, which are retried. It is safe for concurrent use, also while
// [Dispatcher.Run] runs.
//
// Errors: [ErrSecret] as for New; d keeps its secret then.
func (d *Dispatcher) SetSecret(secret []byte) error {
	if err := CheckSecret(secret); err != nil {
		return err
	}
	key, _ := signingKey(secret)
	d.key.Store(&key)
	return nil
}

// Notify makes d read the outbox now rather than at its next poll. It
// never blocks, so it can be called from [plantstore.OnCreate] after the
// event is in the outbox.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers events until ctx is done or [Dispatcher.Stop] is called,
// then cancels the attempts in flight, releases the deliveries it holds
// to other Dispatchers, and returns once they have ended. Outbox failures
// are logged and retried at the next poll. After Stop it returns nil at
// once.
//
// Errors: [ErrRunning] when Run was called before, or [Start] ran d;
// otherwise nil.
func (d *Dispatcher) Run(ctx context.Context) error {
	ctx, err := d.begin(ctx)
	if errors.Is(err, errStopped) {
		return nil
	}
	if err != nil {
		return err
	}
	d.run(ctx)
	return nil
}

// runSep separates the instance's name from the run id in a lease owner.
const runSep = " run "

// errStopped is begin's error for a Dispatcher stopped before it ran.
var errStopped = errors.New("webhook: dispatcher stopped")

// begin marks d as running and returns the context it runs with, which
// Stop cancels: ErrRunning when d ran before, errStopped when Stop came
// first.
func (d *Dispatcher) begin(ctx context.Context) (context.Context, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.running:
		return nil, ErrRunning
	case d.stopped:
		return nil, errStopped
	}
	d.running = true
	ctx, d.cancel = context.WithCancel(ctx)
	d.done = make(chan struct{})
	return ctx, nil
}

// Stop stops delivery as the end of Run's context does, and returns once
// Run has returned: the attempts in flight cancelled, the deliveries held
// handed back to the outbox. A Dispatcher stopped before it runs never
// delivers. Stop is safe to call more than once, and concurrently.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	d.stopped = true
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run delivers events until ctx is done: Run's work, once begin let it.
func (d *Dispatcher) run(ctx context.Context) {
	defer close(d.done)
	defer d.cancel()
	runs, _ := d.source.(plantstore.OutboxRuns)
	if d.cfg.instance == "" {
		runs = nil
	}
	var wg sync.WaitGroup
	if runs != nil {
		r := &runRecord{d: d, runs: runs, others: 1}
		r.lockRun(ctx)
		r.beat(ctx)
		wg.Go(func() { r.keep(ctx) })
		defer r.end(ctx)
	}
	for _, s := range d.subs {
		wg.Go(func() { s.run(ctx) })
	}
	wg.Go(func() { d.fanOut(ctx) })
	wg.Go(func() { d.logStats(ctx) })
	wg.Wait()
}

// fanOut creates the deliveries of new events whenever Notify is called,
// and every poll interval, and wakes the subscribers when there are some.
// After a fan-out that found events it waits batchGap before the next, so
// that under a stream of creates each moves a batch of events rather than
// taking a transaction from the outbox for every create's.
func (d *Dispatcher) fanOut(ctx context.Context) {
	t := time.NewTicker(d.cfg.pollInterval)
	defer t.Stop()
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		total := 0
		for ctx.Err() == nil {
			n, err := d.source.FanOut(ctx, d.keys, maxRead)
			if err != nil {
				d.logOutboxError(ctx, "fan out", err)
				break
			}
			total += n
			if n < maxRead {
				break
			}
		}
		d.logDrops(ctx, time.Now())
		if total > 0 {
			for _, s := range d.subs {
				s.notify()
			}
			gap.Reset(batchGap)
			select {
			case <-ctx.Done():
				return
			case <-gap.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-t.C:
		}
	}
}

// logStats logs the outbox depth and the delivery rate every
// stats interval while either is not zero.
func (d *Dispatcher) logStats(ctx context.Context) {
	t := time.NewTicker(d.cfg.statsInterval)
	defer t.Stop()
	last, lastTime := d.counts.delivered.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := d.source.Depth(ctx)
		if err != nil {
			d.logOutboxError(ctx, "count", err)
			continue
		}
		now, delivered := time.Now(), d.counts.delivered.Load()
		if n > 0 || delivered > last {
			rate := float64(delivered-last) / now.Sub(lastTime).Seconds()
			d.log.InfoContext(ctx, "webhook: outbox", "depth", n, "delivered", delivered-last,
				"per_second", fmt.Sprintf("%.1f", rate), "interval", now.Sub(lastTime).Round(time.Second))
		}
		last, lastTime = delivered, now
	}
}

// dropLog is what logDrops remembers between calls.
type dropLog struct {
	seen     uint64    // the drops counted at the last call
	loggedAt time.Time // when drops were last logged
	unlogged uint64    // drops since
}

// logDrops logs, at error level, the events the outbox dropped since the
// last line: the first drop at once, then at most one line every
// dropLogInterval while drops go on, as a [MemoryOutbox] does. Only
// fanOut calls it.
func (d *Dispatcher) logDrops(ctx context.Context, now time.Time) {
	if d.dropper == nil {
		return
	}
	total := d.dropper.Dropped()
	l := &d.drops
	l.unlogged += total - l.seen
	l.seen = total
	if l.unlogged == 0 || !l.loggedAt.IsZero() && now.Sub(l.loggedAt) < dropLogInterval {
		return
	}
	attrs := []any{"dropped", l.unlogged, "dropped_total", total}
	if !l.loggedAt.IsZero() {
		attrs = append(attrs, "since", now.Sub(l.loggedAt).Round(time.Second))
	}
	d.log.ErrorContext(ctx, "webhook: outbox full: dropped the oldest pending events, undelivered", attrs...)
	l.unlogged, l.loggedAt = 0, now
}

func (d *Dispatcher) logOutboxError(ctx context.Context, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	d.log.ErrorContext(ctx, "webhook: outbox "+op+" failed", "error", err.Error())
}
