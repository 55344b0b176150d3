package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestProbeWrite checks what storagetest.Run's WriteProber subtests cannot
// see from outside: that each probe is a committed write. Then it closes
// the database under the Store: a probe, each Create of a batch that
// fails, and a Create after it fail with ErrUnavailable.
func TestProbeWrite(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t)
		ctx := context.Background()
		for i := range 3 {
			if err := s.ProbeWrite(ctx); err != nil {
				t.Fatalf("ProbeWrite %d = %v, want nil", i, err)
			}
		}
		// Each probe is a committed write, not one the database may
		// skip as a no-op.
		if n := queryInt(t, s.db, `SELECT n FROM write_probe WHERE id = `+s.q.param(1), s.probeID); n != 3 {
			t.Errorf("write_probe.n after 3 probes = %d, want 3", n)
		}
		s.db.Close()
		if err := s.ProbeWrite(ctx); !errors.Is(err, plantstore.ErrUnavailable) {
			t.Errorf("ProbeWrite on a closed database = %v, want ErrUnavailable", err)
		}
		reqs := []*createReq{{plant: plantstore.Plant{ID: 1}}, {plant: plantstore.Plant{ID: 2}}, {plant: plantstore.Plant{ID: 1}}}
		errs, _ := s.insert(ctx, ctx, reqs)
		for i, err := range errs {
			if !errors.Is(err, plantstore.ErrUnavailable) {
				t.Errorf("create %d in a failed batch = %v, want ErrUnavailable", i, err)
			}
		}
		if err := s.Create(ctx, plantstore.Plant{ID: 3}); !errors.Is(err, plantstore.ErrUnavailable) {
			t.Errorf("Create on a closed database = %v, want ErrUnavailable", err)
		}
	})
}

// TestProbeWriteOnReadOnlyPostgres shows that a session that may not write
// fails the probe with ErrUnavailable, though the database answers reads.
func TestProbeWriteOnReadOnlyPostgres(t *testing.T) {
	t.Parallel()
	s := postgresBackend.open(t)
	db, ctx := s.db, context.Background()
	// One connection, so that the session setting holds for every call.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping = %v, want nil", err)
	}
	if err := s.ProbeWrite(ctx); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("ProbeWrite in a read-only session = %v, want ErrUnavailable", err)
	}
}

// TestProbeWriteRowPerStore shows that each Store probes a row of its own,
// so that a probe held up in another process's transaction (here, an
// update of the first Store's row left uncommitted) does not hold up this
// one's, and that Close removes the row.
func TestProbeWriteRowPerStore(t *testing.T) {
	t.Parallel()
	db, _ := postgresBackend.newDB(t)
	ctx := context.Background()
	a := openStore(t, db, Postgres)
	b := openStore(t, db, Postgres, WithTimeout(2*time.Second))
	if a.probeID == b.probeID {
		t.Fatalf("two Stores share write_probe row %d", a.probeID)
	}
	if err := a.ProbeWrite(ctx); err != nil {
		t.Fatalf("ProbeWrite = %v", err)
	}
	held, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec(`UPDATE write_probe SET n = n + 1 WHERE id = $1`, a.probeID); err != nil {
		t.Fatal(err)
	}
	if err := b.ProbeWrite(ctx); err != nil {
		t.Errorf("ProbeWrite while another Store's row is locked = %v, want nil", err)
	}
	held.Rollback()
	b.Close()
	if n := queryInt(t, db, `SELECT count(*) FROM write_probe WHERE id = $1`, b.probeID); n != 0 {
		t.Errorf("rows of a closed Store's probe = %d, want 0", n)
	}
}
