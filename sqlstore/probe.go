package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/plantstore/plantstore"
)

// probeWrite counts up the one row of write_probe. Its value changes on
// every call, so that SQLite cannot skip the write as a no-op: the commit
// appends a frame to the WAL and flushes it, as a Create's does.
const probeWrite = `INSERT INTO write_probe (id, n) VALUES (1, 1)
	ON CONFLICT (id) DO UPDATE SET n = write_probe.n + 1`

// ProbeWrite implements [plantstore.WriteProber]: it commits an update of
// a one-row table of its own, taking its turn with the Creates and Deletes
// of this Store, so that a full disk, a read-only file or database, or a
// database that cannot be reached makes it fail as a Create would. The
// commit is flushed to stable storage like any other.
//
// Errors: an error wrapping [plantstore.ErrUnavailable] when the write
// cannot be committed, within the Store's timeout (see [WithTimeout]),
// whatever the reason; the context's error when ctx ends first.
func (s *Store) ProbeWrite(ctx context.Context) (err error) {
	defer s.m.done(opProbeWrite, s.m.start(), &err)
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := s.probeWrite(dctx); err != nil {
		err = failure(ctx, "probe write", err)
		if ctx.Err() == nil && !errors.Is(err, plantstore.ErrUnavailable) {
			// A read-only standby, for one, rejects the write for good
			// reasons of its own; it still cannot take writes.
			err = fmt.Errorf("%w: %w", err, plantstore.ErrUnavailable)
		}
		return err
	}
	return nil
}

func (s *Store) probeWrite(ctx context.Context) error {
	if err := s.lockWrites(ctx); err != nil {
		return err
	}
	defer s.unlockWrites()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, probeWrite); err != nil {
		return err
	}
	return tx.Commit()
}
