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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
)

// Defaults of the [Config] fields left zero.
const (
	DefaultAttemptTimeout = 10 * time.Second
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultMaxAge         = 24 * time.Hour
	DefaultPollInterval   = time.Second
	DefaultConcurrency    = 4
	DefaultMaxInFlight    = 1000
	DefaultLease          = 30 * time.Second
	DefaultStatsInterval  = 30 * time.Second
)

// Config configures a [Dispatcher]. Only Subscribers and Secret are
// required; every other zero field takes its default.
type Config struct {
	// Subscribers are the absolute http or https URLs every event is
	// POSTed to. Every Dispatcher sharing one outbox must list the same
	// subscribers.
	Subscribers []string

	// Secret signs deliveries: raw key bytes, or "whsec_" followed by the
	// key in base64; at least [MinKeyBytes] bytes of key either way.
	Secret []byte

	// Client sends the deliveries. The default never follows redirects:
	// like any status other than 2xx, a 3xx fails the attempt.
	Client *http.Client

	// AttemptTimeout bounds one delivery attempt, response included.
	// Default 10s.
	AttemptTimeout time.Duration

	// InitialBackoff and MaxBackoff bound the wait before a retry: before
	// attempt n+1 the dispatcher waits a random time between zero and
	// min(MaxBackoff, InitialBackoff·2ⁿ⁻¹) ("full jitter"). Defaults 1s and
	// 5m.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration

	// MaxAge is how long after its Event.Time an event is retried. Once a
	// failed attempt finds the event older than MaxAge, the event is
	// abandoned for that subscriber and the abandonment logged. Every
	// event is attempted at least once per subscriber. Default 24h.
	MaxAge time.Duration

	// PollInterval is how often the outbox is read when nothing calls
	// Notify: for events that other processes added, and for retries that
	// come due. Default 1s.
	PollInterval time.Duration

	// Concurrency caps the attempts in flight to one subscriber. Default 4.
	Concurrency int

	// MaxInFlight caps the deliveries to one subscriber that the
	// Dispatcher holds claimed, waiting or in flight. A subscriber that
	// falls behind stops claiming until it catches up; other subscribers
	// are not held back. Default 1000.
	MaxInFlight int

	// Lease is how long a claimed delivery stays with this Dispatcher
	// before another one sharing the outbox may claim it. The Dispatcher
	// renews its leases every third of Lease while it lives, so Lease is
	// how long the deliveries of a process that died wait for another.
	// Default 30s.
	Lease time.Duration

	// Registerer, when not nil, receives the Dispatcher's metrics:
	// plantstore_webhook_deliveries_total,
	// plantstore_webhook_failed_attempts_total,
	// plantstore_webhook_abandoned_total and the gauge
	// plantstore_webhook_outbox_depth, and for a [*MemoryOutbox]
	// plantstore_webhook_dropped_total. Registering fails [New] when the
	// names are taken.
	Registerer prometheus.Registerer

	// StatsInterval is how often the outbox depth and the delivery rate
	// are logged at info level, while either is not zero. Default 30s.
	StatsInterval time.Duration

	// Logger receives delivery failures, abandonments and the periodic
	// statistics. It never receives secrets, bodies, or subscriber URLs
	// beyond scheme and host. Default slog.Default().
	Logger *slog.Logger
}

// A Dispatcher delivers the events of a [plantstore.Outbox] to every
// subscriber of its [Config].
//
// Dispatchers in several processes may share one durable outbox: each
// claims deliveries with a lease (see [plantstore.Outbox]), so that each
// event reaches each subscriber once while every process lives, and at
// least once when one dies: its claimed deliveries are claimed by another
// Dispatcher once their leases expire. Receivers drop repeated
// webhook-ids.
//
// Each subscriber is served on its own: it has its own deliveries, its
// own retries and a pool of at most Config.Concurrency attempts, so a slow
// or dead subscriber delays neither creates nor deliveries to other
// subscribers. A 2xx response ends the delivery; any other outcome is
// recorded in the outbox and retried with backoff, by whichever
// Dispatcher claims it when it is due, until MaxAge.
type Dispatcher struct {
	source  plantstore.Outbox
	cfg     Config
	key     []byte
	log     *slog.Logger
	owner   string   // this Dispatcher's name in the leases it takes
	keys    []string // the subscribers' keys in the outbox
	subs    []*subscriber
	wake    chan struct{}
	metrics metrics

	delivered atomic.Int64 // successful deliveries, for the statistics line

	mu      sync.Mutex
	running bool
}

// ErrRunning reports a second call of [Dispatcher.Run].
var ErrRunning = errors.New("webhook: dispatcher already ran")

// New returns a Dispatcher that delivers the events of source as cfg says.
//
// Errors: [ErrSecret] for an unusable cfg.Secret, one with a key shorter
// than [MinKeyBytes] included; an error when there are
// no subscribers, a subscriber is not an absolute http or https URL, a
// duration or count is negative, or cfg.Registerer refuses the metrics.
func New(source plantstore.Outbox, cfg Config) (*Dispatcher, error) {
	if source == nil {
		return nil, errors.New("webhook: nil outbox")
	}
	if err := CheckSecret(cfg.Secret); err != nil {
		return nil, err
	}
	key, _ := signingKey(cfg.Secret)
	if len(cfg.Subscribers) == 0 {
		return nil, errors.New("webhook: no subscribers")
	}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"AttemptTimeout", &cfg.AttemptTimeout, DefaultAttemptTimeout},
		{"InitialBackoff", &cfg.InitialBackoff, DefaultInitialBackoff},
		{"MaxBackoff", &cfg.MaxBackoff, DefaultMaxBackoff},
		{"MaxAge", &cfg.MaxAge, DefaultMaxAge},
		{"PollInterval", &cfg.PollInterval, DefaultPollInterval},
		{"Lease", &cfg.Lease, DefaultLease},
		{"StatsInterval", &cfg.StatsInterval, DefaultStatsInterval},
	} {
		switch {
		case *f.v < 0:
			return nil, fmt.Errorf("webhook: negative %s", f.name)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"Concurrency", &cfg.Concurrency, DefaultConcurrency},
		{"MaxInFlight", &cfg.MaxInFlight, DefaultMaxInFlight},
	} {
		switch {
		case *f.v < 0:
			return nil, fmt.Errorf("webhook: negative %s", f.name)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if cfg.Client == nil {
		cfg.Client = defaultClient(cfg.Concurrency)
	}
	d := &Dispatcher{
		source: source,
		cfg:    cfg,
		key:    key,
		log:    cfg.Logger,
		owner:  "dispatcher_" + rand.Text(),
		wake:   make(chan struct{}, 1),
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	seen := map[string]bool{}
	for i, raw := range cfg.Subscribers {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			return nil, fmt.Errorf("webhook: subscriber %d: malformed URL", i)
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, fmt.Errorf("webhook: subscriber %d: scheme must be http or https", i)
		case u.Hostname() == "":
			return nil, fmt.Errorf("webhook: subscriber %d: URL has no host", i)
		}
		k := SubscriberKey(raw)
		if seen[k] {
			return nil, fmt.Errorf("webhook: subscriber %d: listed twice", i)
		}
		seen[k] = true
		d.keys = append(d.keys, k)
		d.subs = append(d.subs, newSubscriber(d, i, raw, k, u.Scheme+"://"+u.Host))
	}
	var dropped func() float64
	if mo, ok := source.(*MemoryOutbox); ok {
		dropped = func() float64 { return float64(mo.Dropped()) }
	}
	if err := d.metrics.register(cfg.Registerer, d.depth, dropped); err != nil {
		return nil, err
	}
	return d, nil
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

// Notify makes d read the outbox now rather than at its next poll. It
// never blocks, so it can be called from [plantstore.OnCreate] after the
// event is in the outbox.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers events until ctx is done, then cancels the attempts in
// flight, releases the deliveries it holds to other Dispatchers, and
// returns once they have ended. Outbox failures are logged and retried at
// the next poll.
//
// Errors: [ErrRunning] when Run was called before; otherwise nil.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	ran := d.running
	d.running = true
	d.mu.Unlock()
	if ran {
		return ErrRunning
	}
	var wg sync.WaitGroup
	for _, s := range d.subs {
		wg.Go(func() { s.run(ctx) })
	}
	wg.Go(func() { d.fanOut(ctx) })
	wg.Go(func() { d.logStats(ctx) })
	wg.Wait()
	return nil
}

// fanOut creates the deliveries of new events whenever Notify is called,
// and every PollInterval, and wakes the subscribers when there are some.
func (d *Dispatcher) fanOut(ctx context.Context) {
	t := time.NewTicker(d.cfg.PollInterval)
	defer t.Stop()
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
		if total > 0 {
			for _, s := range d.subs {
				s.notify()
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

// depth returns the outbox depth, or NaN when the outbox cannot say.
func (d *Dispatcher) depth() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.AttemptTimeout)
	defer cancel()
	n, err := d.source.Depth(ctx)
	if err != nil {
		return nan
	}
	return float64(n)
}

// logStats logs the outbox depth and the delivery rate every
// StatsInterval while either is not zero.
func (d *Dispatcher) logStats(ctx context.Context) {
	t := time.NewTicker(d.cfg.StatsInterval)
	defer t.Stop()
	last, lastTime := d.delivered.Load(), time.Now()
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
		now, delivered := time.Now(), d.delivered.Load()
		if n > 0 || delivered > last {
			rate := float64(delivered-last) / now.Sub(lastTime).Seconds()
			d.log.InfoContext(ctx, "webhook: outbox", "depth", n, "delivered", delivered-last,
				"per_second", fmt.Sprintf("%.1f", rate), "interval", now.Sub(lastTime).Round(time.Second))
		}
		last, lastTime = delivered, now
	}
}

func (d *Dispatcher) logOutboxError(ctx context.Context, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	d.log.ErrorContext(ctx, "webhook: outbox "+op+" failed", "error", err.Error())
}
