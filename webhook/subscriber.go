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
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

const (
	// maxRead caps the events one fan-out or claim takes.
	maxRead = 256
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
	backlog bool                // the last claim was full: more may be due
}

// A delivery is one event on its way to one subscriber.
type delivery struct {
	ev       plantstore.Event
	id       string
	body     []byte
	attempts int       // failed attempts before this one, from the outbox
	until    time.Time // the end of this Dispatcher's lease
	first    time.Time // the first attempt in this process
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

func (s *subscriber) run(ctx context.Context) {
	cfg := &s.d.cfg
	jobs := make(chan *delivery)
	// One slot per worker, so that workers seldom wait to report.
	results := make(chan result, cfg.concurrency)
	var wg sync.WaitGroup
	for range cfg.concurrency {
		wg.Go(func() {
			for dl := range jobs {
				results <- result{dl, s.attempt(ctx, dl)}
			}
		})
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	var nextPoll, nextExtend time.Time
	claimNow := true
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(nextPoll) {
			claimNow = true
			nextPoll = now.Add(cfg.pollInterval)
		}
		if !now.Before(nextExtend) {
			s.extend(ctx)
			nextExtend = now.Add(cfg.lease / 3)
		}
		s.flush(ctx)
		if claimNow {
			claimNow = s.claim(ctx)
		}
		var (
			out  chan *delivery
			next *delivery
		)
		if next = s.nextReady(); next != nil {
			out = jobs
		}
		wait := min(time.Until(nextPoll), time.Until(nextExtend))
		if claimNow {
			wait = 0
		}
		timer.Reset(wait)
		select {
		case out <- next:
			s.queue = s.queue[1:]
		case r := <-results:
			s.handle(ctx, r)
			// Take every result that is ready, so that their acks go to
			// the outbox in one batch.
			for more := true; more; {
				select {
				case r := <-results:
					s.handle(ctx, r)
				default:
					more = false
				}
			}
			claimNow = claimNow || (s.backlog && len(s.held) < cfg.maxInFlight/2)
		case <-s.wake:
			claimNow = true
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
		// is not sent again.
		if r.err == nil {
			s.handle(ctx, r)
		}
	}
	// Hand what is still held back to the outbox, due at once, so that
	// another Dispatcher need not wait for the leases to expire.
	for _, dl := range s.held {
		s.retries = append(s.retries, plantstore.Retry{Seq: dl.ev.Seq, Attempts: dl.attempts, Due: time.Now()})
	}
	clear(s.held)
	s.flush(ctx)
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

// claim takes deliveries from the outbox up to the max in flight held. It
// reports whether more may be waiting.
func (s *subscriber) claim(ctx context.Context) bool {
	room := s.d.cfg.maxInFlight - len(s.held)
	if room <= 0 {
		return false
	}
	limit := min(room, maxRead)
	until := time.Now().Add(s.d.cfg.lease)
	ds, err := s.d.source.Claim(ctx, s.key, s.d.owner, until, limit)
	if err != nil {
		s.logOutboxError(ctx, "claim", err)
		s.backlog = false
		return false
	}
	for _, c := range ds {
		if dl, ok := s.held[c.Seq]; ok {
			// Claimed again after this Dispatcher's lease expired.
			dl.until = until
			continue
		}
		dl := &delivery{ev: c.Event, id: messageID(c.Event), body: Payload(c.Plant), attempts: c.Attempts, until: until}
		s.held[c.Seq] = dl
		s.queue = append(s.queue, dl)
	}
	s.backlog = len(ds) == limit
	return s.backlog
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
	req.Header.Set(HeaderSignature, signature(s.d.key, dl.id, ts, dl.body))
	resp, err := s.d.cfg.client.Do(req)
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

// handle takes the outcome of an attempt: it ends the delivery, or
// schedules a retry, or abandons the event when it is older than the max age.
// The outbox learns of it at the next flush.
func (s *subscriber) handle(ctx context.Context, r result) {
	dl := r.dl
	if r.err == nil {
		s.drop(dl)
		s.acks = append(s.acks, dl.ev.Seq)
		s.d.delivered.Add(1)
		s.d.metrics.delivered.Inc()
		return
	}
	if ctx.Err() != nil {
		return // released to the outbox as Run ends
	}
	s.drop(dl)
	s.d.metrics.failed.Inc()
	now := time.Now()
	attempts := dl.attempts + 1
	born := dl.ev.Time
	if born.IsZero() {
		born = dl.first
	}
	log := s.d.log.With("subscriber", s.name, "subscriber_index", s.idx, HeaderID, dl.id,
		"plant_id", dl.ev.Plant.ID, "attempts", attempts, "error", r.err.Error())
	if now.Sub(born) >= s.d.cfg.maxAge {
		log.ErrorContext(ctx, "webhook: delivery abandoned after max age", "max_age", s.d.cfg.maxAge)
		s.d.metrics.abandoned.Inc()
		s.acks = append(s.acks, dl.ev.Seq)
		return
	}
	due := now.Add(s.backoff(attempts))
	log.WarnContext(ctx, "webhook: delivery attempt failed", "retry_in", due.Sub(now))
	s.retries = append(s.retries, plantstore.Retry{Seq: dl.ev.Seq, Attempts: attempts, Due: due})
}

// flush tells the outbox of the deliveries that ended and the retries
// scheduled since the last flush, one batch each, even as ctx ends. Acks
// that fail are kept for the next flush; retries that fail are dropped,
// since their leases expire and make them due anyway.
func (s *subscriber) flush(ctx context.Context) {
	if len(s.acks) == 0 && len(s.retries) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.cfg.attemptTimeout)
	defer cancel()
	if len(s.retries) > 0 {
		if err := s.d.source.Retry(ctx, s.key, s.d.owner, s.retries); err != nil {
			s.logOutboxError(ctx, "retry", err)
		}
		s.retries = s.retries[:0]
	}
	if len(s.acks) > 0 {
		if err := s.d.source.Ack(ctx, s.key, s.acks); err != nil {
			s.logOutboxError(ctx, "ack", err)
			return
		}
		s.acks = s.acks[:0]
	}
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
