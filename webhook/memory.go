package webhook

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// MemoryOutbox is a [plantstore.Outbox] kept in memory, for use with
// storage that has no outbox of its own, such as
// [plantstore.MemoryStorage]. Pass its Add method to [plantstore.OnCreate].
//
// Pending deliveries are lost if the process dies: an event is kept only
// until it is delivered or abandoned, and only in this process. Use a
// durable storage that implements [plantstore.Outbox] when every
// acknowledged create must be delivered.
//
// Seq values start from the clock, in nanoseconds, when the first event is
// added, so that a restarted process does not reuse the webhook-id of an
// event delivered before the restart and receivers that drop repeated ids
// keep every new event. The zero value is ready to use; a MemoryOutbox is
// safe for concurrent use.
type MemoryOutbox struct {
	mu     sync.Mutex
	last   int64    // the Seq of the last event added
	chunks []*chunk // by ascending Seq
	live   int
}

// Events are kept in fixed-size chunks so that Add never copies the events
// before it, however many are waiting, and a chunk is freed once all of its
// events are deleted, in whatever order.
const chunkSize = 256

type chunk struct {
	events [chunkSize]plantstore.Event
	gone   [chunkSize]bool
	n      int // events added
	live   int // events added and not deleted
}

func (c *chunk) lastSeq() int64 { return c.events[c.n-1].Seq }

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
	if len(m.chunks) == 0 || m.chunks[len(m.chunks)-1].n == chunkSize {
		m.chunks = append(m.chunks, new(chunk))
	}
	c := m.chunks[len(m.chunks)-1]
	c.events[c.n] = plantstore.Event{Seq: m.last, Plant: p, Time: now}
	c.n++
	c.live++
	m.live++
}

// Len returns the number of events waiting for delivery.
func (m *MemoryOutbox) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// PendingEvents implements [plantstore.Outbox.PendingEvents].
func (m *MemoryOutbox) PendingEvents(ctx context.Context, after int64, limit int) ([]plantstore.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []plantstore.Event{}
	ci := sort.Search(len(m.chunks), func(i int) bool { return m.chunks[i].lastSeq() > after })
	for ; ci < len(m.chunks) && len(out) < limit; ci++ {
		c := m.chunks[ci]
		i := sort.Search(c.n, func(i int) bool { return c.events[i].Seq > after })
		for ; i < c.n && len(out) < limit; i++ {
			if !c.gone[i] {
				out = append(out, c.events[i])
			}
		}
	}
	return out, nil
}

// DeleteEvent implements [plantstore.Outbox.DeleteEvent].
func (m *MemoryOutbox) DeleteEvent(ctx context.Context, seq int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ci := sort.Search(len(m.chunks), func(i int) bool { return m.chunks[i].lastSeq() >= seq })
	if ci == len(m.chunks) {
		return nil
	}
	c := m.chunks[ci]
	i := sort.Search(c.n, func(i int) bool { return c.events[i].Seq >= seq })
	if c.events[i].Seq != seq || c.gone[i] {
		return nil
	}
	c.events[i] = plantstore.Event{Seq: seq} // let go of the plant's strings
	c.gone[i] = true
	c.live--
	m.live--
	if c.live == 0 && c.n == chunkSize {
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
	}
	return nil
}
