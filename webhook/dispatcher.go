package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

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
	DefaultCommitWait     = time.Minute
)

// Config configures a [Dispatcher]. Only Subscribers and Secret are
// required; every other zero field takes its default.
type Config struct {
	// Subscribers are the absolute http or https URLs every event is
	// POSTed to.
	Subscribers []string

	// Secret signs deliveries: raw key bytes, or "whsec_" followed by the
	// key in base64.
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
	// Notify. Default 1s.
	PollInterval time.Duration

	// Concurrency caps the attempts in flight to one subscriber. Default 4.
	Concurrency int

	// MaxInFlight caps the events held in memory for one subscriber,
	// read from the outbox but not yet delivered or abandoned. A
	// subscriber that falls behind stops reading until it catches up;
	// other subscribers are not held back. Default 1000.
	MaxInFlight int

	// CommitWait is how long an event may appear in the outbox after an
	// event with a greater Seq, as it can when concurrent transactions
	// commit out of order. Events that appear later are delivered only
	// after a restart. Default 1m.
	CommitWait time.Duration

	// Logger receives delivery failures and abandonments. It never
	// receives secrets, bodies, or subscriber URLs beyond scheme and host.
	// Default slog.Default().
	Logger *slog.Logger
}

// A Dispatcher delivers the events of a [plantstore.Outbox] to every
// subscriber of its [Config].
//
// Each subscriber is served on its own: it has its own position in the
// outbox, its own retries and a pool of at most Config.Concurrency
// attempts, so a slow or dead subscriber delays neither creates nor
// deliveries to other subscribers. A 2xx response ends an event for a
// subscriber; any other outcome is retried with backoff until MaxAge. An
// event is deleted from the outbox once every subscriber has received it
// or given up on it.
//
// While the process runs, each event is sent to each subscriber once,
// plus retries after failed attempts. Events still in the outbox when the
// process stops, including some that were delivered just before, are
// delivered again by the next Dispatcher over the same outbox: delivery is
// at least once, and receivers drop repeated webhook-ids.
type Dispatcher struct {
	source plantstore.Outbox
	cfg    Config
	key    []byte
	log    *slog.Logger
	subs   []*subscriber

	mu      sync.Mutex // guards the outbox positions of every subscriber
	running bool
}

// ErrRunning reports a second call of [Dispatcher.Run].
var ErrRunning = errors.New("webhook: dispatcher already ran")

// New returns a Dispatcher that delivers the events of source as cfg says.
//
// Errors: [ErrSecret] for an unusable cfg.Secret; an error when there are
// no subscribers, a subscriber is not an absolute http or https URL, or a
// duration or count is negative.
func New(source plantstore.Outbox, cfg Config) (*Dispatcher, error) {
	if source == nil {
		return nil, errors.New("webhook: nil outbox")
	}
	key, err := signingKey(cfg.Secret)
	if err != nil {
		return nil, err
	}
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
		{"CommitWait", &cfg.CommitWait, DefaultCommitWait},
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
	d := &Dispatcher{source: source, cfg: cfg, key: key, log: cfg.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
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
		d.subs = append(d.subs, newSubscriber(d, i, raw, u.Scheme+"://"+u.Host))
	}
	return d, nil
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
	for _, s := range d.subs {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Run delivers events until ctx is done, then cancels the attempts in
// flight and returns once they have ended. Events it could not finish stay
// in the outbox. Outbox failures are logged and retried at the next poll.
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
	wg.Wait()
	return nil
}

// done reports whether every subscriber is finished with the event seq:
// each has read it and has no delivery of it left. Callers hold d.mu.
func (d *Dispatcher) done(seq int64) bool {
	for _, s := range d.subs {
		if !s.passed(seq) {
			return false
		}
		if _, ok := s.inflight[seq]; ok {
			return false
		}
	}
	return true
}
