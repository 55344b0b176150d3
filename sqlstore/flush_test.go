package sqlstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/storagetest"
)

// TestCreateAnsweredAfterFlush holds the flusher's flush of the WAL file
// and checks that neither the Create nor a read of its plant is answered
// before the flush ends; and that a Create whose batch committed but whose
// flush failed is answered ErrOutcomeUnknown: its plant is in the
// database, and may not survive a loss of power.
func TestCreateAnsweredAfterFlush(t *testing.T) {
	t.Parallel()
	eachMode(t, flushModes, func(t *testing.T, opts []Option) {
		db, dsn := sqliteBackend.newDB(t)
		flushing := make(chan *os.File, 1)
		release := make(chan struct{})
		var failing atomic.Bool
		s := openStore(t, db, SQLite, append(opts, withFlushFile(func(f *os.File) error {
			select {
			case flushing <- f:
			default:
			}
			<-release
			if failing.Load() {
				return errors.New("EIO")
			}
			return nil
		}))...)
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock) // before the Store's Close, should the test fail
		ctx := context.Background()
		created := make(chan error, 1)
		go func() { created <- s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}) }()
		wal := <-flushing
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		want, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := wal.Stat(); err != nil || !os.SameFile(got, want) {
			t.Fatalf("flushed %s (%v), want the database's WAL file", wal.Name(), err)
		}
		read := make(chan error, 1)
		go func() {
			_, err := s.Plant(ctx, 1)
			read <- err
		}()
		select {
		case err := <-created:
			t.Fatalf("Create answered %v before its flush ended", err)
		case err := <-read:
			t.Fatalf("Plant answered %v before the flush of its Create ended", err)
		case <-time.After(50 * time.Millisecond):
		}
		unblock()
		if err := <-created; err != nil {
			t.Fatalf("Create = %v", err)
		}
		if err := <-read; err != nil {
			t.Fatalf("Plant = %v", err)
		}
		failing.Store(true)
		if err := s.Create(ctx, plantstore.Plant{ID: 2, Name: "Ivy"}); !errors.Is(err, plantstore.ErrOutcomeUnknown) {
			t.Fatalf("Create with a failed flush = %v, want ErrOutcomeUnknown", err)
		}
	})
}

// flushModes are the committer's two ways to flush a batch.
var flushModes = []mode{{"by the committer", nil}, {"beside", []Option{withFlushBeside()}}}

// TestFlushBesideWithoutThread checks that on this machine the flusher
// waits for its flushes without a thread (see aioDatasync), and that such
// a flush makes a write readable from the file as fdatasync does.
func TestFlushBesideWithoutThread(t *testing.T) {
	if newDatasync == nil {
		t.Skip("no flusher on this platform")
	}
	f, err := os.CreateTemp(t.TempDir(), "wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := newAIO(); err != nil {
		t.Skipf("Linux AIO refused here (%v): the flusher uses fdatasync", err)
	}
	sync, _, release := newDatasync(f)
	defer release()
	for i := range 3 {
		if _, err := f.WriteAt([]byte{byte(i)}, int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := sync(); err != nil {
			t.Fatalf("flush %d = %v", i, err)
		}
	}
	bad := &aio{}
	if err := bad.fdatasync(-1); err == nil {
		t.Error("AIO flush of no file = nil, want an error")
	}
}

// TestCommitterConnection checks that the committer's own connection,
// whose commits SQLite does not flush, is never one the pool hands out:
// every connection of the pool flushes its commits while the Store is
// open, after the committer lost its connection (closed as by a driver
// that answers driver.ErrBadConn; the Creates go on, committed on the
// pool) and after the Store is closed.
func TestCommitterConnection(t *testing.T) {
	t.Parallel()
	eachMode(t, flushModes, func(t *testing.T, opts []Option) {
		db, _ := sqliteBackend.newDB(t)
		ctx := context.Background()
		check := func(when string) {
			t.Helper()
			// Every connection the pool holds, which db.Conn hands out
			// before it opens any.
			idle := db.Stats().Idle
			conns := make([]interface{ Close() error }, 0, idle)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range idle {
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
				var sync int
				if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
					t.Fatal(err)
				}
				if sync != 2 {
					t.Fatalf("%s: a pool connection has synchronous=%d, want 2 (FULL)", when, sync)
				}
			}
		}
		s, err := Open(ctx, db, SQLite, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if s.fl == nil {
			t.Skip("no flusher on this platform")
		}
		mustCreate(t, s, "Fern", 1)
		check("with the Store open")
		discard(s.fl.conn)
		mustCreate(t, s, "Ivy", 2, 3)
		if !s.fl.lost {
			t.Error("the committer did not notice its connection was lost")
		}
		if got, err := s.List(ctx, 0, 10); err != nil || len(got) != 3 {
			t.Fatalf("List = %v, %v; want 3 plants", got, err)
		}
		check("after the committer lost its connection")
		s.Close()
		check("after Close")
	})
}

// TestFlushBesideStorage runs storagetest's suite on SQLite with every
// batch split in two lanes and flushed beside the committer: its
// concurrent creates, of one id and of many, check each answer against
// what is stored.
func TestFlushBesideStorage(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) plantstore.Storage { return sqliteBackend.open(t, withFlushBeside()) })
}
