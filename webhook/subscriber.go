package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

const (
	// maxRead caps the events one fan-out takes.
	maxRead = 256
	// maxClaim caps the deliveries one claim takes.
	maxClaim = 256
	// batchGap is the least time between two fan-outs, two claims or two
	// flushes of one subscriber, while there is work for them. A stream
	// of creates wakes the Dispatcher after every group commit; without
	// the gap, each would cost the outbox a transaction of each kind for
	// a handful of events, taking the single writer of SQLite from the
	// creates. It adds at most this much to a delivery's latency.
	batchGap = 10 * time.Millisecond
	// downAfter is how many attempts in a row must fail for a subscriber
	// to be taken as down.
	downAfter = 10
	// maxProbeWait caps the wait between two probes of a subscriber that
	// is down, so that one that comes back is found within it.
	maxProbeWait = 30 * time.Second
	// maxDrain caps the response body read to let the connection be reused.
	maxDrain = 64 << 10
)

// A subscriber is one URL with its own claimed deliveries, its own
// retries and its own pool of workers.
type subscriber struct {
	d    *Dispatcher
	idx  int
	url  string
	key  string // in the outbox
	name string // scheme and host only, for logs
	wake chan struct{}

	// Owned by run.
	held    map[int64]*delivery // claimed, neither ended nor retried: waiting or in flight
	queue   []*delivery         // claimed and waiting, in claim order
	acks    []int64             // ended, not yet acknowledged to the outbox
	retries []plantstore.Retry  // failed, not yet recorded in the outbox

	// A subscriber is down once downAfter attempts in a row failed. While
	// it is down, only one delivery at a time is claimed and attempted, a
	// probe, each after a longer wait; the first that succeeds brings it
	// back up.
	fails     int           // attempts failed in a row
	downSince time.Time     // zero while up
	probeWait time.Duration // before the next probe, while down
	nextProbe time.Time     // while down
	resumed   bool          // came back up since run last looked
}

// A delivery is one event on its way to one subscriber.
type delivery struct {
	ev       plantstore.Event
	id       string
	body     []byte
	attempts int       // failed attempts before this one, from the outbox
	until    time.Time // the end of this Dispatcher's lease
	first    time.Time // the first attempt in this process
	probe    bool      // attempted while the subscriber is down
}

type result struct {
	dl  *delivery
	err error
}

func newSubscriber(d *Dispatcher, idx int, rawURL, key, name string) *subscriber {
	return &subscriber{
		d:    d,
		idx:  idx,
		url:  rawURL,
		key:  key,
		name: name,
		wake: make(chan struct{}, 1),
		held: make(map[int64]*delivery),
	}
}

func (s *subscriber) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
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

// run delivers the subscriber's events until ctx ends.
//
// The subscriber is up, or down once downAfter attempts in a row failed:
//
//   - up: it claims up to the room its workers and its in-flight bound
//     leave (claimLimit), every poll interval, when woken by a new event,
//     and again at once after a claim that came back full; its workers
//     attempt the claimed deliveries in claim order, at most
//     [WithConcurrency] at once;
//   - down: it claims one delivery at a time, a probe, after a wait that
//     doubles up to maxProbeWait; the first probe that succeeds takes it
//     back up (resumed), and it claims at once.
//
// Whatever the state, it talks to the outbox through two calls at most in
// flight, each on a goroutine of its own and paced batchGap apart: a
// claim, and a flush of the acks and retries that piled up meanwhile, so
// that batches grow with the outbox's latency rather than queue one
// transaction per delivery. Every third of the lease it extends the
// leases it holds. When ctx ends it waits for its workers, acknowledges
// what they delivered, and hands every delivery it still holds back to the
// outbox, due at once, so that another Dispatcher need not wait for the
// lease.
func (s *subscriber) run(ctx context.Context) {
	l := s.startLoop(ctx)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		wait := l.startOutboxCalls(ctx, time.Now())
		var (
			out  chan *delivery
			next *delivery
		)
		if next = s.nextReady(); next != nil {
			out = l.jobs
		}
		timer.Reset(wait)
		select {
		case out <- next:
			s.queue = s.queue[1:]
		case r := <-l.results:
			l.takeResults(ctx, r)
		case c := <-l.claimed:
			l.claiming = false
			// A full claim leaves more behind: claim again once there is
			// room.
			l.claimNow = s.take(ctx, c) || l.claimNow
		case failed := <-l.flushed:
			l.flushing = false
			s.acks = append(s.acks, failed...)
		case <-s.wake:
			l.claimNow = true
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	l.finish(ctx)
}

// A loop is the state of a subscriber's run besides the subscriber's own:
// its workers' channels, the outbox calls in flight, and when to make the
// next ones.
type loop struct {
	s       *subscriber
	jobs    chan *delivery
	results chan result
	workers sync.WaitGroup

	claimed              chan claimResult
	flushed              chan []int64
	claiming, flushing   bool // a call in flight
	lastClaim, lastFlush time.Time
	nextPoll, nextExtend time.Time
	claimNow             bool // claim as soon as pacing allows
}

// startLoop starts the subscriber's workers.
func (s *subscriber) startLoop(ctx context.Context) *loop {
	cfg := &s.d.cfg
	l := &loop{
		s:    s,
		jobs: make(chan *delivery),
		// One slot per worker, so that workers seldom wait to report.
		results:  make(chan result, cfg.concurrency),
		claimed:  make(chan claimResult, 1),
		flushed:  make(chan []int64, 1),
		claimNow: true,
	}
	for range cfg.concurrency {
		l.workers.Go(func() {
			for dl := range l.jobs {
				l.results <- result{dl, s.attempt(ctx, dl)}
			}
		})
	}
	return l
}

// startOutboxCalls extends the leases when it is time, starts a flush
// and a claim when they are due and none is in flight, and returns how
// long the loop may wait before it must look again.
func (l *loop) startOutboxCalls(ctx context.Context, now time.Time) time.Duration {
	s, cfg := l.s, &l.s.d.cfg
	if !now.Before(l.nextPoll) {
		l.claimNow = true
		l.nextPoll = now.Add(cfg.pollInterval)
	}
	if !now.Before(l.nextExtend) {
		s.extend(ctx)
		l.nextExtend = now.Add(cfg.lease / 3)
	}
	wait := min(time.Until(l.nextPoll), time.Until(l.nextExtend))
	if !l.flushing && (len(s.acks) > 0 || len(s.retries) > 0) {
		if d := batchGap - now.Sub(l.lastFlush); d > 0 {
			wait = min(wait, d)
		} else {
			l.flushing, l.lastFlush = true, now
			acks, retries := s.acks, s.retries
			s.acks, s.retries = nil, nil
			go func() { l.flushed <- s.flush(ctx, acks, retries) }()
		}
	}
	if s.isDown() && len(s.held) == 0 && !l.claiming {
		wait = min(wait, time.Until(s.nextProbe))
	}
	if (l.claimNow || s.isDown()) && !l.claiming {
		if d := batchGap - now.Sub(l.lastClaim); d > 0 {
			wait = min(wait, d)
		} else if limit := s.claimLimit(now); limit > 0 {
			l.claiming, l.claimNow, l.lastClaim = true, false, now
			go func() { l.claimed <- s.claim(ctx, limit) }()
		}
	}
	return wait
}

// takeResults handles r and every other result that is ready, so that
// their acks go to the outbox in one batch.
func (l *loop) takeResults(ctx context.Context, r result) {
	l.s.handle(ctx, r)
	for {
		select {
		case r := <-l.results:
			l.s.handle(ctx, r)
		default:
			l.claimNow = l.claimNow || l.s.resumed
			l.s.resumed = false
			return
		}
	}
}

// finish ends the run: it waits for the workers, keeps what they
// delivered, takes the outbox calls in flight, and hands back what is
// still held.
func (l *loop) finish(ctx context.Context) {
	s := l.s
	// Drain results while the workers finish: a worker may have more than
	// one result to report, and must not block on a full channel.
	close(l.jobs)
	go func() {
		l.workers.Wait()
		close(l.results)
	}()
	for r := range l.results {
		// A delivery that succeeded as ctx ended still counts, so that it
		// is not sent again.
		if r.err == nil {
			s.handle(ctx, r)
		}
	}
	if l.claiming {
		s.take(ctx, <-l.claimed)
	}
	if l.flushing {
		s.acks = append(s.acks, <-l.flushed...)
	}
	// Hand what is still held back to the outbox, due at once, so that
	// another Dispatcher need not wait for the leases to expire.
	for _, dl := range s.held {
		s.retries = append(s.retries, plantstore.Retry{Seq: dl.ev.Seq, Attempts: dl.attempts, Due: time.Now()})
	}
	clear(s.held)
	s.flush(ctx, s.acks, s.retries)
	if s.isDown() {
		// The gauge counts the subscribers down of a Dispatcher that runs.
		s.downSince = time.Time{}
		s.d.counts.down.Add(-1)
	}
}

// nextReady returns the first waiting delivery whose lease leaves time for
// an attempt, after dropping those whose lease does not: another
// Dispatcher may claim them.
func (s *subscriber) nextReady() *delivery {
	margin := min(s.d.cfg.attemptTimeout, s.d.cfg.lease/2)
	for len(s.queue) > 0 {
		dl := s.queue[0]
		if s.held[dl.ev.Seq] == dl && time.Until(dl.until) >= margin {
			return dl
		}
		s.drop(dl)
		s.queue = s.queue[1:]
	}
	return nil
}

// drop forgets dl, unless the event has been claimed again since, under
// another delivery.
func (s *subscriber) drop(dl *delivery) {
	if s.held[dl.ev.Seq] == dl {
		delete(s.held, dl.ev.Seq)
	}
}

// claimResult is the outcome of one claim.
type claimResult struct {
	ds    []plantstore.Delivery
	until time.Time // the end of their lease
	limit int
	err   error
}

// claimLimit returns how many deliveries the next claim may take: the
// room left under the max in flight, at most maxClaim. It is zero while
// that room is below half of it, so that a subscriber that keeps up
// claims in batches rather than one delivery at a time. While the
// subscriber is down it is one when a probe is due and none is held, and
// zero otherwise; a probe claimed moves the next one a wait later.
func (s *subscriber) claimLimit(now time.Time) int {
	if s.isDown() {
		if len(s.held) > 0 || now.Before(s.nextProbe) {
			return 0
		}
		s.nextProbe = now.Add(s.probeWait)
		return 1
	}
	batch := min(maxClaim, s.d.cfg.maxInFlight)
	room := s.d.cfg.maxInFlight - len(s.held)
	if room < (batch+1)/2 {
		return 0
	}
	return min(room, batch)
}

// claim leases up to limit deliveries from the outbox. It runs on its
// own goroutine; take adds what it returns to those held.
func (s *subscriber) claim(ctx context.Context, limit int) claimResult {
	until := time.Now().Add(s.d.cfg.lease)
	ds, err := s.d.source.Claim(ctx, s.key, s.d.owner, until, limit)
	return claimResult{ds: ds, until: until, limit: limit, err: err}
}

// take adds the deliveries of a claim to those held and queued, and
// reports whether more may be waiting in the outbox. While the subscriber
// is down, the first new delivery is its probe and the others go back to
// the outbox.
func (s *subscriber) take(ctx context.Context, c claimResult) bool {
	if c.err != nil {
		s.logOutboxError(ctx, "claim", c.err)
		return false
	}
	for _, d := range c.ds {
		if dl, ok := s.held[d.Seq]; ok {
			// Claimed again after this Dispatcher's lease expired.
			dl.until = c.until
			continue
		}
		if s.isDown() && len(s.held) > 0 {
			s.retries = append(s.retries, plantstore.Retry{Seq: d.Seq, Attempts: d.Attempts, Due: time.Now()})
			continue
		}
		dl := &delivery{ev: d.Event, id: messageID(d.Event), body: Payload(d.Plant), attempts: d.Attempts, until: c.until, probe: s.isDown()}
		s.held[d.Seq] = dl
		s.queue = append(s.queue, dl)
	}
	return len(c.ds) == c.limit
}

// extend renews the leases of every held delivery, and drops those that
// are no longer this Dispatcher's.
func (s *subscriber) extend(ctx context.Context) {
	if len(s.held) == 0 {
		return
	}
	seqs := make([]int64, 0, len(s.held))
	for seq := range s.held {
		seqs = append(seqs, seq)
	}
	until := time.Now().Add(s.d.cfg.lease)
	kept, err := s.d.source.Extend(ctx, s.key, s.d.owner, seqs, until)
	if err != nil {
		s.logOutboxError(ctx, "extend leases", err)
		return
	}
	keep := make(map[int64]bool, len(kept))
	for _, seq := range kept {
		keep[seq] = true
	}
	for seq, dl := range s.held {
		if keep[seq] {
			dl.until = until
		} else {
			delete(s.held, seq)
		}
	}
}

// attempt POSTs dl once and returns nil for a 2xx response.
func (s *subscriber) attempt(ctx context.Context, dl *delivery) error {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.attemptTimeout)
	defer cancel()
	now := time.Now()
	if dl.first.IsZero() {
		dl.first = now
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(dl.body))
	if err != nil {
		return fmt.Errorf("webhook: build request: %w", err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", "plantstore-webhook")
	req.Header.Set(HeaderID, dl.id)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, signature(*s.d.key.Load(), dl.id, ts, dl.body))
	hook := s.d.cfg.hooks.Attempt
	if hook == nil {
		_, err := s.post(ctx, req)
		return err
	}
	a := Attempt{Subscriber: s.idx, Origin: s.name, MessageID: dl.id, PlantID: dl.ev.Plant.ID, Number: dl.attempts + 1}
	hctx, end := hook(ctx, a, req.Header)
	if hctx != nil && hctx != ctx {
		ctx, req = hctx, req.WithContext(hctx)
	}
	status, err := s.post(ctx, req)
	if end != nil {
		end(status, err)
	}
	return err
}

// post sends req and returns the response's status, 0 when none came, and
// nil for a 2xx.
func (s *subscriber) post(ctx context.Context, req *http.Request) (int, error) {
	resp, err := s.d.cfg.client.Do(req)
	if err != nil {
		// A *url.Error repeats the URL, which may carry credentials.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		if text, ok := malformedResponse(err); ok {
			// net/http quotes what it could not parse, and that is the
			// subscriber's to keep: only its length is logged, and a
			// short prefix at debug level.
			s.d.log.DebugContext(ctx, "webhook: malformed response", "subscriber_index", s.idx,
				"length", len(text), "prefix", escapedPrefix(text))
			return 0, fmt.Errorf("webhook: malformed HTTP response (%d bytes)", len(text))
		}
		return 0, err
	}
	var head [responsePrefix]byte
	n, _ := io.ReadFull(resp.Body, head[:])
	rest, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if n > 0 {
			s.d.log.DebugContext(ctx, "webhook: failed response", "subscriber_index", s.idx,
				"status", resp.StatusCode, "prefix", escapedPrefix(string(head[:n])))
		}
		return resp.StatusCode, fmt.Errorf("webhook: response status %d, %d bytes", resp.StatusCode, int64(n)+rest)
	}
	return resp.StatusCode, nil
}

// responsePrefix is how many bytes of a subscriber's failed or malformed
// response are logged, escaped, at debug level.
const responsePrefix = 32

// malformedResponse returns the text net/http quoted in err as what it
// could not parse of a response (malformed HTTP response, status code or
// version), or false when err is not such an error.
func malformedResponse(err error) (string, bool) {
	msg := err.Error()
	i := strings.Index(msg, "malformed HTTP ")
	if i < 0 {
		return "", false
	}
	rest := msg[i:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return "", true
	}
	if q, err := strconv.QuotedPrefix(rest[j:]); err == nil {
		if text, err := strconv.Unquote(q); err == nil {
			return text, true
		}
	}
	return rest[j:], true
}

// escapedPrefix returns at most responsePrefix bytes of s, quoted with Go
// escapes, so that nothing in it can break a log line.
func escapedPrefix(s string) string {
	if len(s) > responsePrefix {
		s = s[:responsePrefix]
	}
	return strconv.QuoteToASCII(s)
}

// handle takes the outcome of an attempt: it ends the delivery, or
// schedules a retry, or abandons the event when it is older than the max
// age and the subscriber is up. A failure that finds the subscriber down,
// a probe's or the one that took it as down, never abandons: the events
// of a subscriber that is down wait in the outbox, bounded only by the
// outbox's own bound, rather than be abandoned one per probe once the
// outage outlasts the max age. The outbox learns of it at the next flush.
func (s *subscriber) handle(ctx context.Context, r result) {
	dl := r.dl
	if r.err == nil {
		s.drop(dl)
		s.acks = append(s.acks, dl.ev.Seq)
		s.d.counts.delivered.Add(1)
		s.fails = 0
		if s.isDown() {
			s.up(ctx)
		}
		return
	}
	if ctx.Err() != nil {
		return // released to the outbox as Run ends
	}
	s.drop(dl)
	s.d.counts.failed.Add(1)
	now := time.Now()
	s.fails++
	switch {
	case dl.probe && s.isDown():
		s.probeWait = min(2*s.probeWait, s.d.cfg.maxBackoff, maxProbeWait)
		s.nextProbe = now.Add(s.probeWait)
	case !s.isDown() && s.fails >= downAfter:
		s.markDown(ctx, now)
	}
	attempts := dl.attempts + 1
	born := dl.ev.Time
	if born.IsZero() {
		born = dl.first
	}
	log := s.d.log.With("subscriber", s.name, "subscriber_index", s.idx, HeaderID, dl.id,
		"plant_id", dl.ev.Plant.ID, "attempts", attempts, "error", r.err.Error())
	if !s.isDown() && now.Sub(born) >= s.d.cfg.maxAge {
		log.ErrorContext(ctx, "webhook: delivery abandoned after max age", "max_age", s.d.cfg.maxAge)
		s.d.counts.abandoned.Add(1)
		s.acks = append(s.acks, dl.ev.Seq)
		return
	}
	due := now.Add(s.backoff(attempts))
	if s.isDown() {
		// Behind the next probe, which then tries another event if one is
		// due: a subscriber taken as down by refusing one event, the oldest,
		// would otherwise be probed with it again and again, and never
		// come back up to take the others.
		if later := s.nextProbe.Add(s.probeWait); due.Before(later) {
			due = later
		}
	}
	log.WarnContext(ctx, "webhook: delivery attempt failed", "retry_in", due.Sub(now))
	s.retries = append(s.retries, plantstore.Retry{Seq: dl.ev.Seq, Attempts: attempts, Due: due})
}

func (s *subscriber) isDown() bool { return !s.downSince.IsZero() }

// markDown takes the subscriber as down: it stops claiming but for
// probes, and hands the deliveries waiting back to the outbox, due at
// once, so that they wait there rather than fail one by one. Attempts in
// flight end as they will.
func (s *subscriber) markDown(ctx context.Context, now time.Time) {
	s.downSince = now
	s.probeWait = min(s.d.cfg.initialBackoff, maxProbeWait)
	s.nextProbe = now.Add(s.probeWait)
	released := 0
	for _, dl := range s.queue {
		if s.held[dl.ev.Seq] == dl {
			delete(s.held, dl.ev.Seq)
			s.retries = append(s.retries, plantstore.Retry{Seq: dl.ev.Seq, Attempts: dl.attempts, Due: now})
			released++
		}
	}
	clear(s.queue)
	s.queue = s.queue[:0]
	s.d.counts.down.Add(1)
	s.d.log.WarnContext(ctx, "webhook: subscriber down: deliveries paused but for one probe at a time",
		"subscriber", s.name, "subscriber_index", s.idx, "failed_in_a_row", s.fails, "released", released)
}

// up takes the subscriber as up again after a probe succeeded.
func (s *subscriber) up(ctx context.Context) {
	s.d.log.InfoContext(ctx, "webhook: subscriber up again: deliveries resumed",
		"subscriber", s.name, "subscriber_index", s.idx, "down_for", time.Since(s.downSince).Round(time.Millisecond))
	s.downSince = time.Time{}
	s.resumed = true
	s.d.counts.down.Add(-1)
}

// flush tells the outbox of deliveries that ended and retries scheduled,
// one batch each, even as ctx ends, and returns the acks that failed, to
// be tried again with the next batch. Retries that fail are dropped,
// since their leases expire and make them due anyway. It may run on its
// own goroutine: it touches nothing of s but its configuration.
func (s *subscriber) flush(ctx context.Context, acks []int64, retries []plantstore.Retry) (failed []int64) {
	if len(acks) == 0 && len(retries) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.cfg.attemptTimeout)
	defer cancel()
	if len(retries) > 0 {
		if err := s.d.source.Retry(ctx, s.key, s.d.owner, retries); err != nil {
			s.logOutboxError(ctx, "retry", err)
		}
	}
	if len(acks) > 0 {
		if err := s.d.source.Ack(ctx, s.key, acks); err != nil {
			s.logOutboxError(ctx, "ack", err)
			return acks
		}
	}
	return nil
}

// backoff returns a random wait, with full jitter, before the attempt that
// follows the given number of failed ones.
func (s *subscriber) backoff(attempts int) time.Duration {
	ceil := s.d.cfg.initialBackoff
	for i := 1; i < attempts && ceil < s.d.cfg.maxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, s.d.cfg.maxBackoff)
	return rand.N(ceil + 1)
}

func (s *subscriber) logOutboxError(ctx context.Context, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	s.d.log.ErrorContext(ctx, "webhook: outbox "+op+" failed", "subscriber_index", s.idx, "error", err.Error())
}
