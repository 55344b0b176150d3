package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
)

// holdEventTx begins, on its own connection of db, a transaction that
// stores plant id and records its event, as another process's Create
// would, and leaves it open: a process stopped between its INSERTs and
// its COMMIT. It returns the transaction, rolled back in t.Cleanup.
func holdEventTx(t *testing.T, db *sql.DB, id int64) *sql.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.ExecContext(ctx, `INSERT INTO plants (id, name) VALUES ($1, 'held')`, id); err != nil {
		t.Fatalf("insert the held plant: %v", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (plant_id, name, created_us) VALUES ($1, 'held', 0)`, id); err != nil {
		t.Fatalf("insert the held event: %v", err)
	}
	return tx
}

// TestCreateDoesNotWaitForOtherWriters stops one Store, with the outbox,
// in the middle of its create transaction, as a process stopped with
// SIGSTOP would be (its connection to the database stalls right after it
// sent its events), and checks that another Store on the same database
// still stores plants of other ids at once, in both commit modes: the
// writers of different ids share no lock.
func TestCreateDoesNotWaitForOtherWriters(t *testing.T) {
	t.Parallel()
	eachMode(t, modes, func(t *testing.T, opts []Option) {
		direct, proxy, dsn := behindProxy(t)
		opts = append([]Option{WithOutbox(), WithTimeout(2 * time.Second)}, opts...)
		frozen := openStore(t, openDB(t, "pgx", dsn), Postgres, opts...)
		s := openStore(t, direct, Postgres, opts...)
		ctx := context.Background()

		stalled := proxy.StallAfter([]byte("INSERT INTO events"))
		frozenErr := make(chan error, 1)
		go func() { frozenErr <- frozen.Create(ctx, plantstore.Plant{ID: 1, Name: "frozen"}) }()
		select {
		case <-stalled:
		case err := <-frozenErr:
			t.Fatalf("the first Store's Create returned %v before its transaction stalled", err)
		}
		for id := int64(2); id < 5; id++ {
			start := time.Now()
			if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "p"}); err != nil {
				t.Fatalf("Create(%d) while another Store is stopped mid-transaction = %v (after %v), want nil", id, err, time.Since(start))
			}
		}
		proxy.Resume()
		<-frozenErr
	})
}

// TestFanOutTakesLateCommits has an event written before others and
// committed after them, and checks that the fan-out neither skips it nor
// waits for it: the events behind it are fanned out at once, it is fanned
// out once it commits, and each event once.
func TestFanOutTakesLateCommits(t *testing.T) {
	t.Parallel()
	s := postgresBackend.open(t, WithOutbox())
	ctx := context.Background()
	subs := []string{"a"}
	mustCreate(t, s, "p", 1)
	held := holdEventTx(t, s.db, 2) // its event's seq is below the next ones
	mustCreate(t, s, "p", 3, 4)
	if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 3 {
		t.Fatalf("FanOut() while an older writer is open = %d, %v; want 3: the events committed", n, err)
	}
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 1 {
		t.Fatalf("FanOut() once it committed = %d, %v; want 1: its event", n, err)
	}
	if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 0 {
		t.Fatalf("FanOut() again = %d, %v; want 0", n, err)
	}
	_, got := claim(t, s, "a", "o", time.Now().Add(time.Hour), 10)
	if diff := cmp.Diff([]int64{1, 2, 3, 4}, got); diff != "" {
		t.Errorf("plants of the claimed deliveries mismatch (-want +got):\n%s", diff)
	}
}

// TestTimeoutsCutOffAFrozenWriter shows the two timeouts every write
// transaction sets: a Create of an id that a transaction left open is
// inserting gives up after the lock timeout, with ErrUnavailable, and
// PostgreSQL ends a transaction of the Store's that sits idle longer than
// the idle timeout, releasing what it held.
func TestTimeoutsCutOffAFrozenWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := postgresBackend.open(t, WithLockTimeout(100*time.Millisecond), WithIdleInTransactionTimeout(200*time.Millisecond))
	holdEventTx(t, s.db, 7)
	start := time.Now()
	err := s.Create(ctx, plantstore.Plant{ID: 7, Name: "p"})
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Create of an id a frozen writer holds = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Create of an id a frozen writer holds took %v, want about the lock timeout", took)
	}

	// A transaction of the Store that stops between two statements, as a
	// stopped process's does.
	tx, err := s.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO plants (id, name) VALUES (8, 'frozen')`); err != nil {
		t.Fatal(err)
	}
	// Each check is a statement, so the transaction must stay idle longer
	// than its timeout between two of them: the sleep is the scenario.
	testkit.WaitUntil(t, 10*time.Second, "the server to end a transaction idle past its idle timeout", func() bool {
		time.Sleep(300 * time.Millisecond)
		var n int
		return tx.QueryRowContext(ctx, `SELECT 1`).Scan(&n) != nil
	})
	if err := s.Create(ctx, plantstore.Plant{ID: 8, Name: "p"}); err != nil {
		t.Errorf("Create of the id the ended transaction held = %v, want nil", err)
	}
}
