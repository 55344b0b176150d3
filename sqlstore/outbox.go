package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/plantstore/plantstore"
)

// The outbox keeps each event in the events table, written by Create in
// the plant's transaction, and each of its deliveries not yet ended in
// webhook_deliveries, one row per (subscriber, seq) with the retry
// schedule (attempts, due_us) and the lease (lease_us, owner). FanOut
// creates the rows, Claim leases them with one UPDATE … RETURNING, Ack
// deletes them, and deletes an event in the same transaction as its last
// delivery. The lease is what splits the work between processes: no
// coordinator, nothing but the database.

// Concurrent transactions of the outbox, in one process or many, take
// row locks only: FanOut the events it fans out (see queries.fanOut), Ack
// and the trim of WithOutboxMaxPending the events they may delete, in seq
// order, before any delivery, so that an Ack that ends the last delivery
// of an event sees every other delivery of it that ended before, and
// deletes the event, and no two of them deadlock. SQLite serialises
// writers by itself.

// batchRows caps the rows one outbox statement names, well below the
// placeholder limits of both dialects.
const batchRows = 256

// trimRows caps the seqs of the oldest events that one FanOut drops to
// keep within WithOutboxMaxPending, so that setting a bound on a large
// outbox does not hold the writer for long at once.
const trimRows = 4096

// WithOutboxMaxPending bounds the outbox of a Store opened [WithOutbox] to
// the n newest events: an event not yet delivered to every subscriber
// once n more have been recorded after it (counted by seq) is dropped,
// with its deliveries to every subscriber, as if abandoned. So at most n
// events are pending, whatever the subscribers do, and the database stops
// growing while one is down for long. Drops are made by [Store.FanOut],
// which the Dispatchers call, never by Create, so a full outbox does not
// slow creates; [Store.Dropped] counts them. A delivery that a Dispatcher
// holds claimed when its event is dropped, waiting or in flight (up to
// webhook.WithMaxInFlight per subscriber), may still be made. An n of zero or less, the default,
// sets no bound: every event recorded is delivered or abandoned after its
// retries.
func WithOutboxMaxPending(n int) Option {
	return func(c *config) { c.outboxMax = max(n, 0) }
}

// Dropped returns the number of outbox events this Store dropped
// undelivered to keep within [WithOutboxMaxPending].
func (s *Store) Dropped() uint64 { return s.dropped.Load() }

var errOwner = errors.New("sqlstore: empty subscriber or owner")

// FanOut implements [plantstore.Outbox.FanOut]. Events are recorded only
// by a Store opened [WithOutbox]. On PostgreSQL, an event whose
// transaction commits after others that began after it is fanned out once
// it commits, after theirs; concurrent FanOuts fan out different events.
// With [WithOutboxMaxPending], it first drops up to 4096 of the oldest
// events past the bound, in the same transaction.
func (s *Store) FanOut(ctx context.Context, subscribers []string, limit int) (int, error) {
	if len(subscribers) == 0 || limit <= 0 {
		return 0, nil
	}
	// A subscriber named twice has one delivery of each event; on SQLite
	// the count of events is that of the rows inserted over that of the
	// subscribers.
	subscribers = slices.Compact(slices.Sorted(slices.Values(subscribers)))
	args := make([]any, 0, 1+len(subscribers))
	args = append(args, limit)
	for _, sub := range subscribers {
		args = append(args, sub)
	}
	var n, dropped int64
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if s.cfg.outboxMax > 0 {
			var err error
			if dropped, err = s.trim(ctx, tx); err != nil {
				return err
			}
		}
		if s.dialect == Postgres {
			return tx.QueryRowContext(ctx, s.q.fanOut(len(subscribers)), args...).Scan(&n)
		}
		res, err := tx.ExecContext(ctx, s.q.fanOut(len(subscribers)), args...)
		if err != nil {
			return err
		}
		rows, err := res.RowsAffected()
		n = (rows + int64(len(subscribers)) - 1) / int64(len(subscribers))
		return err
	})
	if err != nil {
		return 0, failure(ctx, "fan out events", err)
	}
	s.dropped.Add(uint64(dropped))
	return int(n), nil
}

// trim drops, in tx, the oldest events more than the outbox's bound
// behind the newest, and their deliveries, at most trimRows seqs of them,
// and returns how many events it dropped. Both ends of the seq range are
// read from the primary key; the deletes are ranges of the primary key
// and of webhook_deliveries_seq.
func (s *Store) trim(ctx context.Context, tx *sql.Tx) (int64, error) {
	var lo, hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, s.q.seqRange).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	cut := hi.Int64 - int64(s.cfg.outboxMax)
	if !lo.Valid || lo.Int64 > cut {
		return 0, nil
	}
	cut = min(cut, lo.Int64+trimRows-1)
	if s.dialect == Postgres {
		if _, err := tx.ExecContext(ctx, s.q.lockOldEvents, cut); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q.dropDeliveries, cut); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, s.q.dropEvents, cut)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Claim implements [plantstore.Outbox.Claim]. It uses the clock of this
// process: the processes sharing a database need clocks that agree to
// well within a lease.
func (s *Store) Claim(ctx context.Context, subscriber, owner string, until time.Time, limit int) (_ []plantstore.Delivery, err error) {
	ctx, track := s.track(ctx, OpClaimEvents)
	defer track.done(&err)
	if subscriber == "" || owner == "" {
		return nil, errOwner
	}
	limit = min(limit, batchRows)
	if limit <= 0 {
		return []plantstore.Delivery{}, nil
	}
	now := time.Now().UnixMicro()
	attempts := map[int64]int{}
	var (
		seqs   []int64
		events map[int64]plantstore.Event
	)
	// The events are read in the claiming transaction: a claim whose
	// caller never learns of it would hold its deliveries for a lease.
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q.claim(), until.UnixMicro(), owner, subscriber, now, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var n int
			if err := rows.Scan(&seq, &n); err != nil {
				return err
			}
			attempts[seq] = n
			seqs = append(seqs, seq)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(seqs) == 0 {
			return nil
		}
		events, err = readEvents(ctx, tx, s.q.events(len(seqs)), seqs)
		return err
	})
	if err != nil {
		return nil, failure(ctx, "claim deliveries", err)
	}
	if len(seqs) == 0 {
		return []plantstore.Delivery{}, nil
	}
	out := make([]plantstore.Delivery, 0, len(events))
	var gone []int64
	for _, seq := range seqs {
		ev, ok := events[seq]
		if !ok {
			gone = append(gone, seq)
			continue
		}
		out = append(out, plantstore.Delivery{Event: ev, Attempts: attempts[seq]})
	}
	if len(gone) > 0 {
		// Only a FanOut racing an Ack of the same event's last delivery
		// could leave such a row behind; it has nothing to deliver.
		if err := s.Ack(ctx, subscriber, gone); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b plantstore.Delivery) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// readEvents runs query, which reads the events seqs, and returns them by
// seq.
func readEvents(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, seqs []int64) (map[int64]plantstore.Event, error) {
	rows, err := q.QueryContext(ctx, query, int64Args(seqs)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := make(map[int64]plantstore.Event, len(seqs))
	for rows.Next() {
		var (
			e       plantstore.Event
			tag     sql.NullString
			created int64
		)
		if err := rows.Scan(&e.Seq, &e.Plant.ID, &e.Plant.Name, &tag, &created); err != nil {
			return nil, err
		}
		e.Plant.Tag, e.Plant.HasTag = tag.String, tag.Valid
		e.Time = time.UnixMicro(created).UTC()
		events[e.Seq] = e
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return events, nil
}

// Extend implements [plantstore.Outbox.Extend].
func (s *Store) Extend(ctx context.Context, subscriber, owner string, seqs []int64, until time.Time) ([]int64, error) {
	if subscriber == "" || owner == "" {
		return nil, errOwner
	}
	kept := []int64{}
	for batch := range slices.Chunk(seqs, batchRows) {
		args := append([]any{until.UnixMicro(), subscriber, owner}, int64Args(batch)...)
		err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, s.q.extend(len(batch)), args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var seq int64
				if err := rows.Scan(&seq); err != nil {
					return err
				}
				kept = append(kept, seq)
			}
			return rows.Err()
		})
		if err != nil {
			return nil, failure(ctx, "extend leases", err)
		}
	}
	return kept, nil
}

// Retry implements [plantstore.Outbox.Retry].
func (s *Store) Retry(ctx context.Context, subscriber, owner string, retries []plantstore.Retry) error {
	if subscriber == "" || owner == "" {
		return errOwner
	}
	for len(retries) > 0 {
		batch := retries[:min(len(retries), batchRows)]
		retries = retries[len(batch):]
		args := make([]any, 0, 2+3*len(batch))
		args = append(args, subscriber, owner)
		for _, r := range batch {
			args = append(args, r.Seq, r.Attempts, r.Due.UnixMicro())
		}
		err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, s.q.retry(len(batch)), args...)
			return err
		})
		if err != nil {
			return failure(ctx, "schedule retries", err)
		}
	}
	return nil
}

// Ack implements [plantstore.Outbox.Ack]. It is one transaction of two
// statements for each 256 deliveries: one deletes the deliveries, the
// other the events left without any.
func (s *Store) Ack(ctx context.Context, subscriber string, seqs []int64) (err error) {
	ctx, track := s.track(ctx, OpAckEvents)
	defer track.done(&err)
	if subscriber == "" {
		return errOwner
	}
	if len(seqs) == 0 {
		return nil
	}
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for batch := range slices.Chunk(seqs, batchRows) {
			args := int64Args(batch)
			if s.dialect == Postgres {
				if _, err := tx.ExecContext(ctx, s.q.lockEvents(len(batch)), args...); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, s.q.endDeliveries(len(batch)), append([]any{subscriber}, args...)...); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q.purgeEvents(len(batch)), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return failure(ctx, "end deliveries", err)
	}
	return nil
}

// Depth implements [plantstore.Outbox.Depth].
func (s *Store) Depth(ctx context.Context) (int, error) {
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(dctx, s.q.depth).Scan(&n); err != nil {
		return 0, failure(ctx, "count events", err)
	}
	return n, nil
}

// writeTx runs fn in a transaction that writes, on SQLite after this
// Store's turn to write. The whole of it, fn included, is bounded by the
// Store's timeout: fn runs its statements with the context it is given. A
// failed commit is judged by commitError.
func (s *Store) writeTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := s.lockWrites(ctx); err != nil {
		return err
	}
	defer s.unlockWrites()
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return commit(ctx, tx)
}

func int64Args(vs []int64) []any {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return args
}
