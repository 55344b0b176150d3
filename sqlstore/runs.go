package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

// The runs of the Dispatchers sharing the outbox are kept in webhook_runs,
// one row per run: its lease owner, its instance, and when its record
// expires, in microseconds of the database's clock (PostgreSQL's, or on
// SQLite the clock of the one host its processes share), so that the
// clocks of the processes need not agree. A run renews its row with Beat
// while it lives and deletes it with EndRun as it stops; TakeBack deletes
// the expired rows of an instance's other runs and ends their leases in
// the same transaction, so that a run that was only slow, and beats again,
// finds its row gone and its leases no longer its own.

var _ plantstore.OutboxRuns = (*Store)(nil)

// forgetRuns is how long after it expired the record of a run is kept for
// a restart of its instance: longer than any lease it held is likely to
// last. TakeBack then drops it, whatever its instance, so that the
// records of instances that never come back, such as those named by a
// port chosen by the system, do not pile up.
const forgetRuns = time.Hour

var errRun = errors.New("sqlstore: empty instance or owner")

// nowUS is the expression of the database's clock, in microseconds since
// the Unix epoch.
func (q queries) nowUS() string {
	if q.dialect == Postgres {
		return `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`
}

// Beat implements [plantstore.OutboxRuns.Beat]: one statement when the
// run's record is there, two at its first beat.
func (s *Store) Beat(ctx context.Context, instance, owner string, ttl time.Duration) (renewed bool, err error) {
	if instance == "" || owner == "" {
		return false, errRun
	}
	p, now := s.q.param, s.q.nowUS()
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_runs SET expires_us = `+now+` + `+p(2)+` WHERE owner = `+p(1), owner, ttl.Microseconds())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n > 0 {
			renewed = n > 0
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO webhook_runs (owner, instance, expires_us) VALUES (`+p(1)+`, `+p(2)+`, `+now+` + `+p(3)+`)`+
			` ON CONFLICT (owner) DO UPDATE SET expires_us = excluded.expires_us`, owner, instance, ttl.Microseconds())
		return err
	})
	if err != nil {
		return false, failure(ctx, "record run", err)
	}
	return renewed, nil
}

// TakeBack implements [plantstore.OutboxRuns.TakeBack], in one
// transaction. It also drops the records of any instance's runs that
// expired more than an hour ago: their leases are likely to have expired
// too, and a restart of their instance then takes back nothing.
func (s *Store) TakeBack(ctx context.Context, instance, owner string) (released, others int, err error) {
	if instance == "" || owner == "" {
		return 0, 0, errRun
	}
	p, now := s.q.param, s.q.nowUS()
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		released, others = 0, 0
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_runs WHERE expires_us < `+now+` - `+p(1), forgetRuns.Microseconds()); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `DELETE FROM webhook_runs WHERE instance = `+p(1)+` AND owner <> `+p(2)+` AND expires_us < `+now+` RETURNING owner`, instance, owner)
		if err != nil {
			return err
		}
		var gone []any
		for rows.Next() {
			var o string
			if err := rows.Scan(&o); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for len(gone) > 0 {
			batch := gone[:min(len(gone), batchRows)]
			gone = gone[len(batch):]
			var b strings.Builder
			b.WriteString(`UPDATE webhook_deliveries SET lease_us = 0, owner = '' WHERE lease_us > 0 AND owner IN (`)
			s.q.placeholders(&b, 1, len(batch))
			b.WriteString(`)`)
			res, err := tx.ExecContext(ctx, b.String(), batch...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			released += int(n)
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM webhook_runs WHERE instance = `+p(1)+` AND owner <> `+p(2), instance, owner).Scan(&others)
	})
	if err != nil {
		return 0, 0, failure(ctx, "take back leases", err)
	}
	return released, others, nil
}

// EndRun implements [plantstore.OutboxRuns.EndRun], in one transaction.
func (s *Store) EndRun(ctx context.Context, owner string) (released int, err error) {
	if owner == "" {
		return 0, errRun
	}
	p := s.q.param
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_us = 0, owner = '' WHERE lease_us > 0 AND owner = `+p(1), owner)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		released = int(n)
		_, err = tx.ExecContext(ctx, `DELETE FROM webhook_runs WHERE owner = `+p(1), owner)
		return err
	})
	if err != nil {
		return 0, failure(ctx, "end run", err)
	}
	return released, nil
}
