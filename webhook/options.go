package webhook

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of the [Dispatcher] settings that no [Option] sets.
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
	DefaultHeartbeat      = 10 * time.Second
)

// An Option configures the [Dispatcher] returned by [New]. A zero
// duration or count leaves the default; a negative one makes New fail.
type Option func(*config)

type config struct {
	client         *http.Client
	attemptTimeout time.Duration
	initialBackoff time.Duration
	maxBackoff     time.Duration
	maxAge         time.Duration
	pollInterval   time.Duration
	concurrency    int
	maxInFlight    int
	lease          time.Duration
	instance       string
	heartbeat      time.Duration
	runLock        string
	statsInterval  time.Duration
	logger         *slog.Logger
	hooks          Hooks
	memory         []MemoryOption // see WithMemoryOutbox
}

// WithClient makes the Dispatcher send deliveries with c. The default
// never follows redirects: like any status other than 2xx, a 3xx fails
// the attempt.
func WithClient(c *http.Client) Option {
	return func(cfg *config) { cfg.client = c }
}

// WithAttemptTimeout bounds one delivery attempt, response included.
// Default [DefaultAttemptTimeout], 10s.
func WithAttemptTimeout(d time.Duration) Option {
	return func(cfg *config) { cfg.attemptTimeout = d }
}

// WithBackoff bounds the wait before a retry: before attempt n+1 the
// Dispatcher waits a random time between zero and
// min(maxWait, initial·2ⁿ⁻¹) ("full jitter"). Defaults
// [DefaultInitialBackoff] and [DefaultMaxBackoff], 1s and 5m; a maxWait
// below initial is taken as initial. The probes of a subscriber that is
// down (see the package documentation) wait initial, then twice as long
// after each that fails, up to maxWait or 30s, whichever is less.
func WithBackoff(initial, maxWait time.Duration) Option {
	return func(cfg *config) { cfg.initialBackoff, cfg.maxBackoff = initial, maxWait }
}

// WithMaxAge sets how long after its Event.Time an event is retried to a
// subscriber that is up. Once a failed attempt finds the event older than
// d while the subscriber is up, the event is abandoned for that subscriber
// and the abandonment logged: the max age is there for an event that a
// subscriber keeps refusing while it takes others. A failure that finds
// the subscriber down (see the package documentation), a probe's or the
// one that took it as down, never abandons: the events of a subscriber
// that is down wait, however long it is away, bounded only by the
// outbox's bound ([WithMaxPending] on a [MemoryOutbox],
// sqlstore.WithOutboxMaxPending). Every event is attempted at least once
// per subscriber. Default [DefaultMaxAge], 24h.
func WithMaxAge(d time.Duration) Option {
	return func(cfg *config) { cfg.maxAge = d }
}

// WithPollInterval sets how often the outbox is read when nothing calls
// [Dispatcher.Notify]: for events that other processes added, and for
// retries that come due. Default [DefaultPollInterval], 1s.
func WithPollInterval(d time.Duration) Option {
	return func(cfg *config) { cfg.pollInterval = d }
}

// WithConcurrency caps the attempts in flight to one subscriber. Default
// [DefaultConcurrency].
func WithConcurrency(n int) Option {
	return func(cfg *config) { cfg.concurrency = n }
}

// WithMaxInFlight caps the deliveries to one subscriber that the
// Dispatcher holds claimed, waiting or in flight. A subscriber that falls
// behind stops claiming until it catches up; other subscribers are not
// held back. Default [DefaultMaxInFlight], 1000.
func WithMaxInFlight(n int) Option {
	return func(cfg *config) { cfg.maxInFlight = n }
}

// WithLease sets how long a claimed delivery stays with this Dispatcher
// before another one sharing the outbox may claim it. The Dispatcher
// renews its leases every third of d while it lives, so d is how long the
// deliveries of a process that died wait for another. Default
// [DefaultLease], 30s.
func WithLease(d time.Duration) Option {
	return func(cfg *config) { cfg.lease = d }
}

// WithInstance names the instance the Dispatcher runs for: a name that
// stays the same across the restarts of one process, such as its host
// name and address (cmd/plantstore's). Each run of the Dispatcher claims
// under a lease owner of its own, the name followed by a random run id,
// so that live Dispatchers never share an owner, however they are named:
// two containers of one service with one host name, both listening on
// [::]:8080, are two runs of one instance, each keeping its own leases.
//
// When the outbox is a [plantstore.OutboxRuns], a named Dispatcher keeps
// a record of its run there, renewed every third of [WithHeartbeat]'s
// time while it lives, and takes back the deliveries that earlier runs
// of the same instance held once they are known gone: at once when the
// run lock of [WithRunLock] shows it, or else once their records have
// expired. So a process restarted after a crash or kill -9 delivers what
// its previous run held at once, or about the heartbeat's time after it
// starts, instead of waiting for the leases ([WithLease]); a clean stop
// hands them back itself. The leases of a run that still renews its
// record are never taken: a live twin keeps its deliveries. Default: no
// instance, and a random owner, new for every Dispatcher, whose leases
// only expire. [InstanceName] names a process by its host and address.
func WithInstance(name string) Option {
	return func(cfg *config) { cfg.instance = name }
}

// WithOwner is WithInstance, its former name.
//
// Deprecated: use [WithInstance]. The name no longer is the lease owner
// itself: each run adds an id of its own.
func WithOwner(name string) Option { return WithInstance(name) }

// WithHeartbeat sets how long the record of a Dispatcher's run (see
// [WithInstance]) outlives its last renewal, made every third of d. A run
// takes back what expired runs of its instance held only once it has
// renewed its own record for d without a failure, so that a live twin
// that lost the outbox as it did has renewed its own meanwhile: without a
// run lock ([WithRunLock]), a restart takes back what a crashed run held
// about d after it starts. A live run that cannot reach the outbox for
// longer than d, or stalls that long, while another run of its instance
// can, is taken for gone, and the deliveries it is attempting may then be
// made twice, as when a lease expires. Default [DefaultHeartbeat], 10s.
func WithHeartbeat(d time.Duration) Option {
	return func(cfg *config) { cfg.heartbeat = d }
}

// WithRunLock names a file on a local file system that each run of the
// Dispatcher's instance (see [WithInstance]) locks while it lives, and
// in which it writes its lease owner. The lock ends with the process,
// however it ends, kill -9 included: a run that finds the file unlocked
// knows that the run named in it is gone, and takes back at once what
// that run held, without waiting for its record to expire
// ([WithHeartbeat]). A run that cannot lock the file, because another
// live run of the instance on the same file system holds it, or because
// the file cannot be made, goes without, and says so at debug level. A
// run that stops cleanly, its leases handed back, removes the file.
// Give each instance a file of its own, the same across its restarts
// ([RunLockPath] names one). On a system without flock, such
// as Windows, the file is not used. Default: none.
func WithRunLock(path string) Option {
	return func(cfg *config) { cfg.runLock = path }
}

// WithStatsInterval sets how often the outbox depth and the delivery rate
// are logged at info level, while either is not zero. Default
// [DefaultStatsInterval], 30s.
func WithStatsInterval(d time.Duration) Option {
	return func(cfg *config) { cfg.statsInterval = d }
}

// WithLogger sets where delivery failures, abandonments and the periodic
// statistics are logged. They never carry secrets, bodies, or subscriber
// URLs beyond scheme and host. Default [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) { cfg.logger = l }
}
