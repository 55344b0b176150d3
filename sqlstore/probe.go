package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"

	"github.com/plantstore/plantstore"
)

// probeWrite counts up the one row of write_probe and replaces its pad.
// Both change on every call, so that SQLite cannot skip any page of the
// write as unchanged: the commit appends probePad bytes and more to the
// WAL and flushes them, as a Create's does.
const probeWrite = `INSERT INTO write_probe (id, n, pad) VALUES (1, 1, %[1]s)
	ON CONFLICT (id) DO UPDATE SET n = write_probe.n + 1, pad = %[1]s`

// probePad is how many bytes a write probe writes: as much as a large
// batch of creates, so that a disk with a few pages left, which a small
// write could still use, shows as full. After a failed write SQLite's WAL
// file keeps the space the failed transaction took, and a probe of a few
// bytes would fit in it while the creates that failed still would not.
const probePad = 64 << 10

// ProbeWrite implements [plantstore.WriteProber]: it commits an update of
// a one-row table of its own, 64 KiB of fresh bytes, taking its turn with
// the Creates and Deletes
// of this Store, so that a full disk, a read-only file or database, or a
// database that cannot be reached makes it fail as a Create would. The
// commit is flushed to stable storage like any other.
//
// Errors: an error wrapping [plantstore.ErrUnavailable] when the write
// cannot be committed, within the Store's timeout (see [WithTimeout]),
// whatever the reason; the context's error when ctx ends first.
func (s *Store) ProbeWrite(ctx context.Context) (err error) {
	defer s.m.done(opProbeWrite, s.m.start(), &err)
	if err := s.probeWrite(ctx); err != nil {
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
	return s.writeTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		// Random, so that no page of the pad repeats the last probe's, nor
		// compresses to nothing in PostgreSQL's TOAST.
		pad := make([]byte, probePad)
		rand.Read(pad)
		_, err := tx.ExecContext(ctx, fmt.Sprintf(probeWrite, s.q.param(1)), pad)
		return err
	})
}
