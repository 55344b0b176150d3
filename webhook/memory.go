package webhook

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore"
)

// Defaults of the [MemoryOutbox] bounds left zero.
const (
	DefaultMaxPending      = 10_000
	DefaultMaxPendingBytes = 64 << 20
)

// memEventOverhead is what a MemoryOutbox counts for an event besides its
// plant's name and tag: the event, its entries in the outbox's maps, and
// its deliveries, rounded up.
const memEventOverhead = 512

// dropLogInterval is how often a MemoryOutbox that keeps dropping events
// logs a summary of the drops since its last line.
const dropLogInterval = time.Minute

// MemoryOutbox is a [plantstore.Outbox] kept in memory, for use with
// storage that has no outbox of its own, such as
// [memstore.Store]. Pass its Add method to [plantstore.OnCreate].
//
// Pending deliveries are lost if the process dies: an event is kept only
// until it is delivered or abandoned, and only in this process, so only
// the Dispatchers of this process can share it. Use a durable storage
// that implements [plantstore.Outbox] when every acknowledged create must
// be delivered, or several processes must share the work.
//
// Its memory is bounded: when an event added would make more than
// [WithMaxPending] events, or more than [WithMaxPendingBytes] bytes of
// them, pending at once (a subscriber that is down for long, under many
// creates), the oldest pending events are dropped, fanned out or not, for
// every subscriber, until the rest fits. The event being added is always
// kept. Add is never slowed or refused by a full outbox, so neither is a
// create. Drops are counted by [MemoryOutbox.Dropped] (and in its
// [Dispatcher]'s [Dispatcher.Stats]) and
// logged at error level: the first at once, then at most one summary line
// every minute while drops go on. A delivery in flight when its event is
// dropped may still be made.
//
// Seq values start from the clock, in nanoseconds, when the first event is
// added, so that a restarted process does not reuse the webhook-id of an
// event delivered before the restart and receivers that drop repeated ids
// keep every new event. The zero value is ready to use, with the default
// bounds; a MemoryOutbox is safe for concurrent use.
type MemoryOutbox struct {
	maxPending      int          // 0: DefaultMaxPending; < 0: no cap
	maxPendingBytes int64        // 0: DefaultMaxPendingBytes; < 0: no cap
	logger          *slog.Logger // nil: slog.Default()

	dropped atomic.Uint64 // events dropped, ever

	mu      sync.Mutex
	last    int64                                // the Seq of the last event added
	waiting []plantstore.Event                   // added, not fanned out, by ascending Seq
	live    map[int64]*memEvent                  // fanned out, some delivery left
	subs    map[string]map[int64]*memoryDelivery // by subscriber, then Seq
	order   []int64                              // Seqs fanned out, ascending; some may have ended
	bytes   int64                                // counted size of the events waiting and live

	loggedAt time.Time // when drops were last logged
	unlogged uint64    // events dropped since
}

type memEvent struct {
	ev   plantstore.Event
	left int // deliveries not ended
}

type memoryDelivery struct {
	attempts int
	due      time.Time
	lease    time.Time
	owner    string
}

var _ plantstore.Outbox = (*MemoryOutbox)(nil)

// A MemoryOption configures the [MemoryOutbox] returned by
// [NewMemoryOutbox].
type MemoryOption func(*MemoryOutbox)

// WithMaxPending caps the events not yet ended for every subscriber at n.
// Zero leaves the default, [DefaultMaxPending] (10,000); a negative n
// sets no cap.
func WithMaxPending(n int) MemoryOption {
	return func(m *MemoryOutbox) { m.maxPending = n }
}

// WithMaxPendingBytes caps the memory those events take at n bytes,
// counted as their plants' names and tags plus 512 bytes each. Zero
// leaves the default, [DefaultMaxPendingBytes] (64 MiB); a negative n
// sets no cap.
func WithMaxPendingBytes(n int64) MemoryOption {
	return func(m *MemoryOutbox) { m.maxPendingBytes = n }
}

// WithDropLogger sets where the lines about dropped events go. Default
// [slog.Default].
func WithDropLogger(l *slog.Logger) MemoryOption {
	return func(m *MemoryOutbox) { m.logger = l }
}

// NewMemoryOutbox returns an empty MemoryOutbox.
func NewMemoryOutbox(opts ...MemoryOption) *MemoryOutbox {
	m := &MemoryOutbox{}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Add records that p was added, now. It never blocks on delivery: it only
// stores the event in memory under a short lock, dropping the oldest
// pending events when the outbox is full, so it suits
// [plantstore.OnCreate].
func (m *MemoryOutbox) Add(p plantstore.Plant) {
	now := time.Now()
	m.mu.Lock()
	if m.last == 0 {
		m.last = now.UnixNano()
	}
	m.last++
	m.waiting = append(m.waiting, plantstore.Event{Seq: m.last, Plant: p, Time: now})
	m.bytes += eventSize(p)
	if n := m.trim(); n > 0 {
		m.dropped.Add(n)
		m.unlogged += n
	}
	report := m.dropReport(now)
	m.mu.Unlock()
	report()
}

// Dropped returns the number of events dropped, ever, because the outbox
// was full.
func (m *MemoryOutbox) Dropped() uint64 { return m.dropped.Load() }

func eventSize(p plantstore.Plant) int64 {
	return int64(len(p.Name)+len(p.Tag)) + memEventOverhead
}

// trim drops the oldest events, fanned out first, since those are older
// than any still waiting, until the outbox is within its bounds or holds
// one event, and returns how many it dropped. m.mu is held.
func (m *MemoryOutbox) trim() uint64 {
	maxN, maxBytes := m.maxPending, m.maxPendingBytes
	if maxN == 0 {
		maxN = DefaultMaxPending
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxPendingBytes
	}
	var n uint64
	for {
		count := len(m.waiting) + len(m.live)
		if count <= 1 || (maxN < 0 || count <= maxN) && (maxBytes < 0 || m.bytes <= maxBytes) {
			return n
		}
		n++
		if m.dropOldestLive() {
			continue
		}
		m.bytes -= eventSize(m.waiting[0].Plant)
		m.waiting[0] = plantstore.Event{} // let go of the plant's strings
		m.waiting = m.waiting[1:]
	}
}

// dropOldestLive ends every delivery of the oldest event fanned out, and
// reports whether there was one. m.mu is held.
func (m *MemoryOutbox) dropOldestLive() bool {
	for len(m.order) > 0 {
		seq := m.order[0]
		m.order = m.order[1:]
		e, ok := m.live[seq]
		if !ok {
			continue // ended already
		}
		for _, ds := range m.subs {
			delete(ds, seq)
		}
		m.end(seq, e)
		return true
	}
	return false
}

// end forgets the event seq, whose deliveries have all ended. m.mu is held.
func (m *MemoryOutbox) end(seq int64, e *memEvent) {
	delete(m.live, seq)
	m.bytes -= eventSize(e.ev.Plant)
	// Ended events leave their Seq in m.order until it reaches the front;
	// compact it when they outnumber the live ones, so that a delivery
	// stuck at the front does not let m.order grow with every ack behind
	// it.
	for len(m.order) > 0 && m.live[m.order[0]] == nil {
		m.order = m.order[1:]
	}
	if len(m.order) > 2*len(m.live)+64 {
		m.order = slices.DeleteFunc(slices.Clone(m.order), func(seq int64) bool { return m.live[seq] == nil })
	}
}

// dropReport returns a function that logs the drops not yet logged, when
// the last line is at least dropLogInterval old or there was none: so the
// first drop is logged at once, and a flood of them once a minute. It
// returns a function that does nothing otherwise. m.mu is held; the
// function is called after it is released.
func (m *MemoryOutbox) dropReport(now time.Time) func() {
	if m.unlogged == 0 || !m.loggedAt.IsZero() && now.Sub(m.loggedAt) < dropLogInterval {
		return func() {}
	}
	n, since := m.unlogged, m.loggedAt
	m.unlogged, m.loggedAt = 0, now
	maxN, maxBytes := m.maxPending, m.maxPendingBytes
	if maxN == 0 {
		maxN = DefaultMaxPending
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxPendingBytes
	}
	total := m.dropped.Load()
	return func() {
		log := m.logger
		if log == nil {
			log = slog.Default()
		}
		attrs := []any{"dropped", n, "dropped_total", total, "max_pending", maxN, "max_pending_bytes", maxBytes}
		if !since.IsZero() {
			attrs = append(attrs, "since", now.Sub(since).Round(time.Second))
		}
		log.Error("webhook: memory outbox full: dropped the oldest pending events, undelivered", attrs...)
	}
}

// Len returns the number of events not yet ended for every subscriber.
func (m *MemoryOutbox) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiting) + len(m.live)
}

// FanOut implements [plantstore.Outbox.FanOut].
func (m *MemoryOutbox) FanOut(ctx context.Context, subscribers []string, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	subscribers = slices.Compact(slices.Sorted(slices.Values(subscribers)))
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(subscribers) == 0 || limit <= 0 {
		return 0, nil
	}
	n := min(limit, len(m.waiting))
	if m.live == nil {
		m.live = make(map[int64]*memEvent)
		m.subs = make(map[string]map[int64]*memoryDelivery)
	}
	for _, sub := range subscribers {
		if m.subs[sub] == nil {
			m.subs[sub] = make(map[int64]*memoryDelivery)
		}
	}
	for _, ev := range m.waiting[:n] {
		m.live[ev.Seq] = &memEvent{ev: ev, left: len(subscribers)}
		m.order = append(m.order, ev.Seq)
		for _, sub := range subscribers {
			m.subs[sub][ev.Seq] = &memoryDelivery{}
		}
	}
	clear(m.waiting[:n]) // let go of the plants' strings
	m.waiting = m.waiting[n:]
	return n, nil
}

// Claim implements [plantstore.Outbox.Claim]. It looks at every delivery
// to subscriber not yet ended, which is cheap while a subscriber keeps up
// and grows with the backlog of one that does not.
func (m *MemoryOutbox) Claim(ctx context.Context, subscriber, owner string, until time.Time, limit int) ([]plantstore.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var seqs []int64
	for seq, d := range m.subs[subscriber] {
		if !d.due.After(now) && !d.lease.After(now) {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	out := make([]plantstore.Delivery, 0, min(len(seqs), max(limit, 0)))
	for _, seq := range seqs[:min(len(seqs), max(limit, 0))] {
		d := m.subs[subscriber][seq]
		d.lease, d.owner = until, owner
		out = append(out, plantstore.Delivery{Event: m.live[seq].ev, Attempts: d.attempts})
	}
	return out, nil
}

// Extend implements [plantstore.Outbox.Extend].
func (m *MemoryOutbox) Extend(ctx context.Context, subscriber, owner string, seqs []int64, until time.Time) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := []int64{}
	for _, seq := range seqs {
		if d, ok := m.subs[subscriber][seq]; ok && d.owner == owner {
			d.lease = until
			kept = append(kept, seq)
		}
	}
	slices.SortFunc(kept, cmp.Compare)
	return kept, nil
}

// Retry implements [plantstore.Outbox.Retry].
func (m *MemoryOutbox) Retry(ctx context.Context, subscriber, owner string, retries []plantstore.Retry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range retries {
		if d, ok := m.subs[subscriber][r.Seq]; ok && d.owner == owner {
			d.attempts, d.due, d.lease = r.Attempts, r.Due, time.Time{}
		}
	}
	return nil
}

// Ack implements [plantstore.Outbox.Ack].
func (m *MemoryOutbox) Ack(ctx context.Context, subscriber string, seqs []int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, seq := range seqs {
		if _, ok := m.subs[subscriber][seq]; !ok {
			continue
		}
		delete(m.subs[subscriber], seq)
		if e := m.live[seq]; e != nil {
			if e.left--; e.left == 0 {
				m.end(seq, e)
			}
		}
	}
	return nil
}

// Depth implements [plantstore.Outbox.Depth]. Since a Dispatcher calls it
// periodically, it also logs the summary of drops that no later Add has
// logged.
func (m *MemoryOutbox) Depth(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	n := len(m.waiting) + len(m.live)
	report := m.dropReport(time.Now())
	m.mu.Unlock()
	report()
	return n, nil
}
