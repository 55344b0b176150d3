package webhook

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// MemoryOutbox is a [plantstore.Outbox] kept in memory, for use with
// storage that has no outbox of its own, such as
// [plantstore.MemoryStorage]. Pass its Add method to [plantstore.OnCreate].
//
// Pending deliveries are lost if the process dies: an event is kept only
// until it is delivered or abandoned, and only in this process, so only
// the Dispatchers of this process can share it. Use a durable storage
// that implements [plantstore.Outbox] when every acknowledged create must
// be delivered, or several processes must share the work.
//
// Seq values start from the clock, in nanoseconds, when the first event is
// added, so that a restarted process does not reuse the webhook-id of an
// event delivered before the restart and receivers that drop repeated ids
// keep every new event. The zero value is ready to use; a MemoryOutbox is
// safe for concurrent use.
type MemoryOutbox struct {
	mu      sync.Mutex
	last    int64                                // the Seq of the last event added
	waiting []plantstore.Event                   // added, not fanned out, by ascending Seq
	live    map[int64]*memEvent                  // fanned out, some delivery left
	subs    map[string]map[int64]*memoryDelivery // by subscriber, then Seq
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

// NewMemoryOutbox returns an empty MemoryOutbox.
func NewMemoryOutbox() *MemoryOutbox { return &MemoryOutbox{} }

// Add records that p was added, now. It never blocks on delivery: it only
// stores the event in memory under a short lock, so it suits
// [plantstore.OnCreate].
func (m *MemoryOutbox) Add(p plantstore.Plant) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == 0 {
		m.last = now.UnixNano()
	}
	m.last++
	m.waiting = append(m.waiting, plantstore.Event{Seq: m.last, Plant: p, Time: now})
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
				delete(m.live, seq)
			}
		}
	}
	return nil
}

// Depth implements [plantstore.Outbox.Depth].
func (m *MemoryOutbox) Depth(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return m.Len(), nil
}
