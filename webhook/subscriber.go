package webhook

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

const (
	// maxRead caps the events one outbox read returns.
	maxRead = 256
	// maxGapRead caps the events one read of a gap returns.
	maxGapRead = 32
	// maxGaps caps the gaps a subscriber watches; the oldest go first.
	maxGaps = 1024
	// maxDrain caps the response body read to let the connection be reused.
	maxDrain = 64 << 10
)

// A subscriber is one URL with its own position in the outbox, its own
// retries and its own pool of workers.
type subscriber struct {
	d    *Dispatcher
	idx  int
	url  string
	name string // scheme and host only, for logs
	wake chan struct{}

	// Written by run with d.mu held; read by other subscribers with d.mu
	// held, and by run without it.
	cursor   int64               // greatest Seq read
	gaps     []gap               // Seqs below cursor not read yet, by ascending lo
	inflight map[int64]*delivery // read, neither delivered nor abandoned

	// Owned by run.
	queue     queue   // deliveries waiting for their turn, by due time
	undeleted []int64 // finished events whose DeleteEvent failed
	backlog   bool    // the last read stopped because MaxInFlight was reached
	readNow   bool
}

// A gap is a range of Seqs below a subscriber's cursor that no read has
// returned. Events there may still appear when transactions commit out of
// Seq order, so the range is read again until CommitWait has passed.
type gap struct {
	lo, hi int64
	since  time.Time
}

// A delivery is one event on its way to one subscriber.
type delivery struct {
	ev       plantstore.Event
	id       string
	body     []byte
	attempts int
	first    time.Time // of the first attempt
	due      time.Time
}

type result struct {
	dl  *delivery
	err error
}

func newSubscriber(d *Dispatcher, idx int, rawURL, name string) *subscriber {
	return &subscriber{
		d:        d,
		idx:      idx,
		url:      rawURL,
		name:     name,
		wake:     make(chan struct{}, 1),
		cursor:   math.MinInt64,
		inflight: make(map[int64]*delivery),
	}
}

// messageID returns the webhook-id of ev. It depends only on what the
// outbox stores, so every delivery of an event carries the same id, even
// from another process; the creation time keeps ids apart should an outbox
// reuse a Seq after its events are deleted.
func messageID(ev plantstore.Event) string {
	id := "msg_" + strconv.FormatInt(ev.Seq, 10)
	if !ev.Time.IsZero() {
		id += "_" + strconv.FormatInt(ev.Time.UnixMicro(), 10)
	}
	return id
}

// passed reports whether s has read the event seq or knows it is absent.
// Callers hold d.mu.
func (s *subscriber) passed(seq int64) bool {
	if seq > s.cursor {
		return false
	}
	i := sort.Search(len(s.gaps), func(i int) bool { return s.gaps[i].hi >= seq })
	return i == len(s.gaps) || s.gaps[i].lo > seq
}

func (s *subscriber) run(ctx context.Context) {
	cfg := &s.d.cfg
	jobs := make(chan *delivery)
	// One slot per worker, so that workers seldom wait to report.
	results := make(chan result, cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for dl := range jobs {
				results <- result{dl, s.attempt(ctx, dl)}
			}
		})
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	var nextPoll time.Time
	for ctx.Err() == nil {
		if !time.Now().Before(nextPoll) {
			s.readNow = true
			nextPoll = time.Now().Add(cfg.PollInterval)
		}
		if s.readNow {
			s.readNow = s.read(ctx)
		}
		var (
			out  chan *delivery
			next *delivery
		)
		wait := time.Until(nextPoll)
		if len(s.queue) > 0 {
			next = s.queue[0]
			if until := time.Until(next.due); until <= 0 {
				out = jobs
			} else {
				wait = min(wait, until)
			}
		}
		if s.readNow {
			wait = 0
		}
		timer.Reset(wait)
		select {
		case out <- next:
			heap.Pop(&s.queue)
		case r := <-results:
			s.handle(ctx, r)
		case <-s.wake:
			s.readNow = true
		case <-timer.C:
		case <-ctx.Done():
		}
	}

	// Drain results while the workers finish: a worker may have more than
	// one result to report, and must not block on a full channel.
	close(jobs)
	go func() {
		wg.Wait()
		close(results)
	}()
	for r := range results {
		// A delivery that succeeded as ctx ended still counts, so that it
		// is not sent again after a restart.
		if r.err == nil {
			s.finish(ctx, r.dl)
		}
	}
}

// read fills s's window from the outbox: first the gaps, then what follows
// the cursor. It reports whether more events may be waiting.
func (s *subscriber) read(ctx context.Context) bool {
	s.retryDeletes(ctx)
	s.expireGaps()
	for _, g := range append([]gap(nil), s.gaps...) {
		room := s.d.cfg.MaxInFlight - len(s.inflight)
		if room <= 0 {
			s.backlog = true
			return false
		}
		limit := int(min(uint64(g.hi-g.lo)+1, uint64(room), maxGapRead))
		evs, err := s.d.source.PendingEvents(ctx, g.lo-1, limit)
		if err != nil {
			s.logOutboxError(ctx, "read", err)
			return false
		}
		s.fillGap(g, evs)
	}

	room := s.d.cfg.MaxInFlight - len(s.inflight)
	if room <= 0 {
		s.backlog = true
		return false
	}
	limit := min(room, maxRead)
	evs, err := s.d.source.PendingEvents(ctx, s.cursor, limit)
	if err != nil {
		s.logOutboxError(ctx, "read", err)
		return false
	}
	now := time.Now()
	s.d.mu.Lock()
	for _, ev := range evs {
		if ev.Seq <= s.cursor {
			continue
		}
		if ev.Seq > s.cursor+1 {
			s.gaps = append(s.gaps, gap{lo: s.cursor + 1, hi: ev.Seq - 1, since: now})
		}
		s.cursor = ev.Seq
		s.add(ev)
	}
	if n := len(s.gaps) - maxGaps; n > 0 {
		s.gaps = append(s.gaps[:0], s.gaps[n:]...)
	}
	s.d.mu.Unlock()
	s.backlog = len(evs) == room
	return len(evs) == limit && !s.backlog
}

// fillGap queues the events of evs, a read of g, that fall in g, and
// narrows g to the ranges around them. The ranges stay watched: events may
// still commit there.
func (s *subscriber) fillGap(g gap, evs []plantstore.Event) {
	var rest []gap
	lo := g.lo
	for _, ev := range evs {
		if ev.Seq < lo || ev.Seq > g.hi {
			continue
		}
		if ev.Seq > lo {
			rest = append(rest, gap{lo: lo, hi: ev.Seq - 1, since: g.since})
		}
		lo = ev.Seq + 1
	}
	if lo <= g.hi {
		rest = append(rest, gap{lo: lo, hi: g.hi, since: g.since})
	}

	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	i := sort.Search(len(s.gaps), func(i int) bool { return s.gaps[i].lo >= g.lo })
	if i == len(s.gaps) || s.gaps[i] != g {
		return
	}
	for _, ev := range evs {
		if ev.Seq >= g.lo && ev.Seq <= g.hi {
			s.add(ev)
		}
	}
	s.gaps = append(s.gaps[:i], append(rest, s.gaps[i+1:]...)...)
}

// add queues ev for delivery. Callers hold d.mu.
func (s *subscriber) add(ev plantstore.Event) {
	dl := &delivery{ev: ev, id: messageID(ev), body: Payload(ev.Plant), due: time.Now()}
	s.inflight[ev.Seq] = dl
	heap.Push(&s.queue, dl)
}

// expireGaps stops watching gaps older than CommitWait.
func (s *subscriber) expireGaps() {
	cutoff := time.Now().Add(-s.d.cfg.CommitWait)
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	kept := s.gaps[:0]
	for _, g := range s.gaps {
		if g.since.After(cutoff) {
			kept = append(kept, g)
		}
	}
	clear(s.gaps[len(kept):])
	s.gaps = kept
}

// attempt POSTs dl once and returns nil for a 2xx response.
func (s *subscriber) attempt(ctx context.Context, dl *delivery) error {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.AttemptTimeout)
	defer cancel()
	now := time.Now()
	if dl.attempts == 0 {
		dl.first = now
	}
	dl.attempts++
	ts := strconv.FormatInt(now.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(dl.body))
	if err != nil {
		return fmt.Errorf("webhook: build request: %w", err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", "plantstore-webhook")
	req.Header.Set(HeaderID, dl.id)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, signature(s.d.key, dl.id, ts, dl.body))
	resp, err := s.d.cfg.Client.Do(req)
	if err != nil {
		// A *url.Error repeats the URL, which may carry credentials.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook: response status %d", resp.StatusCode)
	}
	return nil
}

// handle takes the outcome of an attempt: it finishes the delivery, or
// schedules a retry, or abandons the event when it is older than MaxAge.
func (s *subscriber) handle(ctx context.Context, r result) {
	dl := r.dl
	if r.err == nil {
		s.finish(ctx, dl)
		return
	}
	if ctx.Err() != nil {
		return // the event stays in the outbox for the next run
	}
	now := time.Now()
	born := dl.ev.Time
	if born.IsZero() {
		born = dl.first
	}
	log := s.d.log.With("subscriber", s.name, "subscriber_index", s.idx, HeaderID, dl.id,
		"plant_id", dl.ev.Plant.ID, "attempts", dl.attempts, "error", r.err.Error())
	if now.Sub(born) >= s.d.cfg.MaxAge {
		log.ErrorContext(ctx, "webhook: delivery abandoned after max age", "max_age", s.d.cfg.MaxAge)
		s.finish(ctx, dl)
		return
	}
	dl.due = now.Add(s.backoff(dl.attempts))
	log.WarnContext(ctx, "webhook: delivery attempt failed", "retry_in", dl.due.Sub(now))
	heap.Push(&s.queue, dl)
}

// backoff returns a random wait, with full jitter, before the attempt that
// follows the given number of failed ones.
func (s *subscriber) backoff(attempts int) time.Duration {
	ceil := s.d.cfg.InitialBackoff
	for i := 1; i < attempts && ceil < s.d.cfg.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, s.d.cfg.MaxBackoff)
	return rand.N(ceil + 1)
}

// finish ends dl for s and deletes its event once no subscriber needs it.
func (s *subscriber) finish(ctx context.Context, dl *delivery) {
	seq := dl.ev.Seq
	s.d.mu.Lock()
	delete(s.inflight, seq)
	last := s.d.done(seq)
	s.d.mu.Unlock()
	if s.backlog {
		s.readNow = true
	}
	if last {
		s.deleteEvent(ctx, seq)
	}
}

// deleteEvent deletes seq from the outbox, even as ctx ends, so that a
// delivered event is not delivered again after a restart.
func (s *subscriber) deleteEvent(ctx context.Context, seq int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.cfg.AttemptTimeout)
	defer cancel()
	if err := s.d.source.DeleteEvent(ctx, seq); err != nil {
		s.logOutboxError(ctx, "delete", err)
		s.undeleted = append(s.undeleted, seq)
	}
}

func (s *subscriber) retryDeletes(ctx context.Context) {
	seqs := s.undeleted
	s.undeleted = nil
	for i, seq := range seqs {
		if ctx.Err() != nil {
			s.undeleted = append(s.undeleted, seqs[i:]...)
			return
		}
		s.deleteEvent(ctx, seq)
	}
}

func (s *subscriber) logOutboxError(ctx context.Context, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	s.d.log.ErrorContext(ctx, "webhook: outbox "+op+" failed", "subscriber_index", s.idx, "error", err.Error())
}

// queue is a heap of deliveries by due time, then Seq.
type queue []*delivery

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].ev.Seq < q[j].ev.Seq
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
}
func (q *queue) Push(x any) {
	*q = append(*q, x.(*delivery))
}
func (q *queue) Pop() any {
	old := *q
	dl := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return dl
}
