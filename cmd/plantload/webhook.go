package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/plantstore/plantstore/webhook"
)

// receiver is the webhook subscriber of -webhook-listen: it answers every
// delivery at once with 204 and counts, by plant id, the deliveries of the
// plants this run creates.
type receiver struct {
	secret []byte    // checks signatures when not empty
	first  int64     // the first id of this run
	upAt   time.Time // deliveries before it are refused with 503

	mu       sync.Mutex
	seen     map[int64]bool // plant ids delivered
	created  map[int64]bool // plant ids created with 200
	both     int            // plant ids in seen and created
	dups     int64          // deliveries of a plant id seen before
	unsigned int64          // deliveries whose signature did not verify
	foreign  int64          // deliveries of plants outside this run
	refused  int64          // deliveries refused before upAt
}

func newReceiver(secret []byte, first int64, upAt time.Time) *receiver {
	return &receiver{secret: secret, first: first, upAt: upAt, seen: map[int64]bool{}, created: map[int64]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if time.Now().Before(rc.upAt) {
		rc.mu.Lock()
		rc.refused++
		rc.mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if len(rc.secret) > 0 {
		if err := webhook.Verify(rc.secret, r.Header, body, time.Now(), 0); err != nil {
			rc.mu.Lock()
			rc.unsigned++
			rc.mu.Unlock()
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
	}
	var p struct {
		ID *int64 `json:"id"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.ID == nil {
		http.Error(w, "not a plant", http.StatusBadRequest)
		return
	}
	id := *p.ID
	rc.mu.Lock()
	switch {
	case id < rc.first:
		rc.foreign++
	case rc.seen[id]:
		rc.dups++
	default:
		rc.seen[id] = true
		if rc.created[id] {
			rc.both++
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// create records that the plant id was created with 200. Its delivery
// may have come first.
func (rc *receiver) create(id int64) {
	rc.mu.Lock()
	rc.created[id] = true
	if rc.seen[id] {
		rc.both++
	}
	rc.mu.Unlock()
}

// counts returns how many plants were created with 200 and how many of
// them were delivered.
func (rc *receiver) counts() (created, delivered int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.created), rc.both
}

// listenWebhooks starts the receiver on addr, which must be a loopback
// address, and returns a function that stops it.
func listenWebhooks(addr string, rc *receiver) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: bad -webhook-listen %q: %w", errUsage, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: -webhook-listen %q: want a loopback address such as 127.0.0.1:PORT", errUsage, addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("plantload: webhook receiver: %w", err)
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, nil
}

// webhookFigures is what the receiver saw during and after the load.
type webhookFigures struct {
	duringLoad int           // plants delivered by the end of the load
	backlog    int           // created with 200 and not delivered at the end of the load
	drain      time.Duration // from the end of the load to the last delivery
	left       int           // still not delivered when the wait ended
	dups       int64
	unsigned   int64
	foreign    int64
	refused    int64
}

// awaitDrain waits, at most wait, until every plant created with 200 is
// delivered, and returns the figures.
func (rc *receiver) awaitDrain(ctx context.Context, wait time.Duration) webhookFigures {
	var f webhookFigures
	end := time.Now()
	created, delivered := rc.counts()
	f.duringLoad, f.backlog = delivered, created-delivered
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for delivered < created && time.Since(end) < wait && ctx.Err() == nil {
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		created, delivered = rc.counts()
	}
	f.left = created - delivered
	if f.backlog > 0 {
		f.drain = time.Since(end)
	}
	rc.mu.Lock()
	f.dups, f.unsigned, f.foreign, f.refused = rc.dups, rc.unsigned, rc.foreign, rc.refused
	rc.mu.Unlock()
	return f
}

// errUndelivered reports plants created with 200 whose webhook did not
// arrive within -webhook-wait.
var errUndelivered = errors.New("plantload: webhooks not delivered")
