// Package logthrottle keeps a burst of identical log lines from flooding
// the log: a [slog.Handler] that passes the first line of a kind at once
// and, while more of that kind keep coming, one summary per interval.
package logthrottle

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxKinds bounds the kinds a Handler tracks; lines of further kinds pass
// through unthrottled, so that the state cannot grow without bound.
const maxKinds = 256

// A Handler passes records to another handler, at most one line per kind
// per interval, where a kind is a level and a message. The first record of
// a kind is handled at once; the records of that kind that follow within
// the interval are counted, not handled, and when the interval ends the
// last of them is handled as a summary, with attributes "repeated" (how
// many were held back, itself included), "first" and "last" (when the
// first and last of them were logged). A kind that stops coming gets its
// summary all the same, from a timer. It is safe for concurrent use.
type Handler struct {
	next     slog.Handler
	interval time.Duration
	st       *state
}

type state struct {
	mu    sync.Mutex
	kinds map[kind]*held
}

type kind struct {
	level slog.Level
	msg   string
}

// held is what a Handler keeps of one kind.
type held struct {
	passed      time.Time // when a line of the kind last went through
	n           int       // records held back since
	first, last time.Time
	rec         slog.Record // the last record held back
	ctx         context.Context
	timer       *time.Timer
}

// New returns a Handler passing to next at most one line per kind every
// interval.
func New(next slog.Handler, interval time.Duration) *Handler {
	return &Handler{next: next, interval: interval, st: &state{kinds: map[kind]*held{}}}
}

// Enabled reports whether next handles records at level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle passes r to next, or holds it back when a record of its kind
// passed less than an interval ago.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	now := time.Now()
	k := kind{r.Level, r.Message}
	h.st.mu.Lock()
	hd := h.st.kinds[k]
	if hd == nil {
		if len(h.st.kinds) >= maxKinds {
			h.st.mu.Unlock()
			return h.next.Handle(ctx, r)
		}
		hd = &held{}
		h.st.kinds[k] = hd
	}
	if hd.n == 0 && now.Sub(hd.passed) >= h.interval {
		hd.passed = now
		h.st.mu.Unlock()
		return h.next.Handle(ctx, r)
	}
	if hd.n == 0 {
		hd.first = r.Time
		hd.timer = time.AfterFunc(h.interval-now.Sub(hd.passed), func() { h.summarise(k) })
	}
	hd.n++
	hd.last = r.Time
	// The record's attributes may refer to the caller's memory, which
	// it may reuse once Handle returns.
	hd.rec = r.Clone()
	// The summary is handled after the request has ended: keep only the
	// values of its context, not its cancellation.
	hd.ctx = context.WithoutCancel(ctx)
	h.st.mu.Unlock()
	return nil
}

// summarise handles the summary of the records of kind k held back.
func (h *Handler) summarise(k kind) {
	h.st.mu.Lock()
	hd := h.st.kinds[k]
	if hd.n == 0 {
		h.st.mu.Unlock()
		return
	}
	now := time.Now()
	r := slog.NewRecord(now, hd.rec.Level, hd.rec.Message, hd.rec.PC)
	hd.rec.Attrs(func(a slog.Attr) bool {
		r.AddAttrs(a)
		return true
	})
	r.AddAttrs(slog.Int("repeated", hd.n), slog.Time("first", hd.first), slog.Time("last", hd.last))
	ctx := hd.ctx
	hd.passed, hd.n, hd.rec, hd.ctx, hd.timer = now, 0, slog.Record{}, nil, nil
	h.st.mu.Unlock()
	// As with Logger.LogAttrs, a line the handler fails to write is lost.
	_ = h.next.Handle(ctx, r)
}

// WithAttrs returns a Handler whose records carry attrs, throttled apart
// from h's.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return New(h.next.WithAttrs(attrs), h.interval)
}

// WithGroup returns a Handler whose records' attributes are in group name,
// throttled apart from h's.
func (h *Handler) WithGroup(name string) slog.Handler {
	return New(h.next.WithGroup(name), h.interval)
}
