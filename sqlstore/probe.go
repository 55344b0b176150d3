package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/plantstore/plantstore"
)

// probeWrite counts up the Store's row of write_probe and replaces its
// pad. Both change on every call, so that SQLite cannot skip any page of
// the write as unchanged: the commit appends probePad bytes and more to
// the WAL and flushes them, as a Create's does. Each Store has a row of
// its own, so that a process stopped in the middle of its probe holds no
// lock another's probe waits for.
const probeWrite = `INSERT INTO write_probe (id, n, pad) VALUES (%[1]s, 1, %[2]s)
	ON CONFLICT (id) DO UPDATE SET n = write_probe.n + 1, pad = %[2]s`

// probePad is how many bytes a write probe writes: as much as a large
// batch of creates, so that a disk with a few pages left, which a small
// write could still use, shows as full. After a failed write SQLite's WAL
// file keeps the space the failed transaction took, and a probe of a few
// bytes would fit in it while the creates that failed still would not.
const probePad = 64 << 10

// ProbeWrite implements [plantstore.WriteProber]: it commits an update of
// the Store's own row of a table of its own, 64 KiB of fresh bytes, taking its turn with
// the Creates and Deletes
// of this Store, so that a full disk, a read-only file or database, or a
// database that cannot be reached makes it fail as a Create would. The
// commit is flushed to stable storage like any other.
//
// Errors: an error wrapping [plantstore.ErrUnavailable] when the write
// cannot be committed, within the Store's timeout (see [WithTimeout]),
// whatever the reason; the context's error when ctx ends first.
func (s *Store) ProbeWrite(ctx context.Context) (err error) {
	ctx, track := s.track(ctx, OpProbeWrite)
	defer track.done(&err)
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
	s.probed.Store(true)
	return s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Random, so that no page of the pad repeats the last probe's, nor
		// compresses to nothing in PostgreSQL's TOAST.
		pad := make([]byte, probePad)
		rand.Read(pad)
		_, err := tx.ExecContext(ctx, fmt.Sprintf(probeWrite, s.q.param(1), s.q.param(2)), s.probeID, pad)
		return err
	})
}

// newProbeID returns a Store's row of write_probe: a random positive
// 32-bit id other than 1, which the Stores of earlier versions share.
func newProbeID() int64 {
	var b [4]byte
	rand.Read(b[:])
	return 2 + int64(binary.BigEndian.Uint32(b[:])%(1<<31-2))
}

// dropProbeRow deletes the Store's row of write_probe, if it wrote one,
// so that the rows of Stores that closed do not pile up. It is best
// effort: a row left by a process that died stays, 64 KiB.
func (s *Store) dropProbeRow() {
	if !s.probed.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM write_probe WHERE id = `+s.q.param(1), s.probeID)
		return err
	})
}
