package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// A flusher lets the SQLite committer run the next batch while the last
// one's commit is being flushed.
//
// With synchronous=FULL, SQLite flushes the WAL inside COMMIT, holding the
// write lock, so that nothing else runs on the database while the disk
// works; where every caller is in the batch being flushed, the core has
// nothing to do either. The committer's own connection therefore commits
// with synchronous=NORMAL, which writes the WAL without flushing it, and
// the committer flushes the WAL file itself (fdatasync, as SQLite does)
// before it answers the batch's Creates, or, where the flush is slow and
// the callers many (see minBesideFlush), hands the batch to the flusher,
// which flushes beside it and then answers them, one flush for all the
// batches handed over meanwhile. Either way a Create is answered only once
// its plant is on stable storage. Every other connection of the Store
// keeps synchronous=FULL, and a commit there flushes the WAL, the
// committer's frames with it.
//
// The WAL file the flusher holds is the one SQLite writes: SQLite removes
// it only when the last connection to the database closes, after copying
// it into the database file and flushing that, and the committer's
// connection stays open as long as the flusher.
//
// Reads on the other connections see a batch as soon as it is committed;
// [Store.Plant] and [Store.List] wait for its flush before they answer
// (see begin), so that nothing is shown that a loss of power could take
// back. Another process reading the same file does not wait.
//
// Measured with the binary on one core and wrk on the other, 32
// connections, on this VM's disk (fdatasync 0.10 to 0.33 ms):
// flushing inside COMMIT left the core idle 24 % of the time (a CPU
// profile sampled 3.81 s in 5 s), for 21,400 creates/s; with
// synchronous=NORMAL and no flush at all, 32,400. With the flush beside
// the committer and the batches halved, scripts/loopback-bench.sh gave
// 1.245 times the creates/s of SQLite's own flush (3 interleaved rounds);
// the figures are in docs/storage.md, under "Group commit".
type flusher struct {
	conn     *sql.Conn    // the committer's, with synchronous=NORMAL
	wal      *os.File     // the database's WAL file
	datasync func() error // flushes wal without holding a thread; see newDatasync
	plain    func() error // flushes wal with fdatasync(2)
	release  func()
	delay    time.Duration // see config.flushDelay
	logger   *slog.Logger
	always   bool // see config.beside

	// The committer's own: whether conn is lost (see lose), the flush
	// time it measured, the time between two Creates' arrivals while a
	// batch filled, and batches since.
	lost    bool
	took    time.Duration // moving average of flushNow's flushes
	gap     time.Duration // moving average; see arrived
	batches int

	mu        sync.Mutex
	pending   []flushJob
	creates   int           // Creates handed over and not yet answered
	committed uint64        // batches begun
	flushed   uint64        // batches whose commit is flushed
	advanced  chan struct{} // closed when flushed grows, then replaced
	wake      chan struct{} // 1-buffered: pending has jobs
	stop      chan struct{} // closed by the committer as it returns
	stopped   chan struct{} // closed once the last job is answered
}

// Beside the committer, the flusher pays where the flush is slow and the
// callers many. With N callers, each with c of work between two Creates,
// and a flush of F, a committer that flushes itself makes N Creates per
// F + N·c; with two lanes flushed beside it, at best N/2 per F, where
// half the callers' work overlaps the other half's flush: more where
// N·c > F. Where the flush is quick, as on tmpfs, halving the batches and
// waking the flusher cost more than the flush: measured with
// scripts/groupcommit-sweep.sh on /dev/shm, flushing every batch beside
// made 0.69 times the creates/s at 8 connections and 0.80 at 32; on this
// VM's disk (fdatasync 0.10 to 0.33 ms under load) 0.93 at 8 connections,
// 1.14 at 32 and 128. With a flush 1 ms slower, BenchmarkGroupCommitSweep
// made 0.64 times the creates/s at 32 callers (N·c about 0.7 ms) and 1.4
// times at 128. So the committer flushes beside only when its own
// flushes take at least minBesideFlush, it expects at least
// minBesideCallers callers, and N·c, with c the gap between two Creates'
// arrivals (see arrived), is at least a flush; it measures a flush of its
// own every remeasure batches, in its lane.
const (
	minBesideFlush   = 50 * time.Microsecond
	minBesideCallers = 16
	remeasure        = 64
)

// A flushJob is a committed batch waiting for its flush.
type flushJob struct {
	seq   uint64 // from begin
	reqs  []*createReq
	errs  []error
	end   func(Outcome) // the Batch hook's, or nil
	start time.Time     // when the batch began, for the Committed hook
}

// openFlusher prepares the committer's connection on the SQLite database
// db and returns a flusher for it, or nil when the database has no file
// (an in-memory one) or this platform has no way to flush a file's data
// alone (see newDatasync).
func openFlusher(ctx context.Context, db *sql.DB) (*flusher, error) {
	if newDatasync == nil {
		return nil, nil
	}
	conn, err := connect(ctx, db)
	if err != nil {
		return nil, err
	}
	fl, err := newFlusher(ctx, conn)
	if fl == nil {
		discard(conn)
	}
	return fl, err
}

// discard closes conn's connection to the database instead of handing it
// back to db's pool: the committer's has synchronous=NORMAL, which no
// other use of the pool may get.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

func newFlusher(ctx context.Context, conn *sql.Conn) (*flusher, error) {
	var path string
	if err := conn.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, nil
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return nil, err
	}
	// Reading the schema opens the WAL file, creating it if need be.
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return nil, err
	}
	wal, err := os.OpenFile(path+"-wal", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open the WAL file: %w", err)
	}
	// With synchronous=NORMAL, SQLite flushes the directory that names a
	// new WAL file only at its first checkpoint.
	if err := syncDir(filepath.Dir(path)); err != nil {
		wal.Close()
		return nil, err
	}
	sync, plain, release := newDatasync(wal)
	return &flusher{
		datasync: sync,
		plain:    plain,
		release:  release,
		conn:     conn,
		wal:      wal,
		advanced: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}, nil
}

// syncDir flushes the directory dir's entries.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sqlstore: flush %s: %w", dir, err)
	}
	return nil
}

// split reports whether the committer is to split its callers into two
// lanes and hand its next batch to the flusher (beside), target being the
// callers it expects; see minBesideFlush. Every remeasure batches of a
// split, the committer flushes the batch itself, to measure the flush.
func (f *flusher) split(target int) (split, beside bool) {
	f.batches++
	if f.lost {
		return false, false
	}
	if f.always {
		return true, true
	}
	if f.took < minBesideFlush || target < minBesideCallers || time.Duration(target)*f.gap < f.took {
		return false, false
	}
	return true, f.batches%remeasure != 0
}

// arrived is told that n Creates came in d, one after another, while a
// batch filled to its size: the callers' work between two Creates, spread
// over the cores.
func (f *flusher) arrived(d time.Duration, n int) {
	f.gap += (d/time.Duration(n) - f.gap) / 8
}

// gone reports whether the committer's connection is gone, as after a
// driver.ErrBadConn, which a *sql.Conn answers with sql.ErrConnDone ever
// after. The committer then commits on db's pool, whose connections
// flush every commit (synchronous=FULL), for the rest of the Store's
// life; the flusher still answers the batches it holds. Called by the
// committer only.
func (f *flusher) gone(ctx context.Context) bool {
	if f.lost {
		return true
	}
	if err := f.conn.PingContext(ctx); errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		f.lost = true
		f.logger.Warn("sqlstore: the group committer's SQLite connection is lost; each commit is now flushed by SQLite", "err", err)
	}
	return f.lost
}

// begin numbers a batch about to commit. Reads that end after it wait for
// its flush (see await).
func (f *flusher) begin() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed++
	return f.committed
}

// flushNow flushes the WAL on the caller's goroutine, after the commit of
// batch seq, and measures the flush.
func (f *flusher) flushNow(seq uint64) error {
	start := time.Now()
	err := f.flush(f.plain)
	f.took += (time.Since(start) - f.took) / 8
	if err == nil {
		f.advance(seq)
	}
	return err
}

// flush flushes the WAL with sync, after the delay a test may set.
func (f *flusher) flush(sync func() error) error {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	return sync()
}

// advance records that every batch up to seq is flushed.
func (f *flusher) advance(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq > f.flushed {
		f.flushed = seq
		close(f.advanced)
		f.advanced = make(chan struct{})
	}
}

// flushError is the error of a Create whose batch committed and whose
// flush failed: its plant is in the database, and may not outlive a loss
// of power.
func flushError(err error) error {
	return fmt.Errorf("sqlstore: create plant: flush the WAL: %w: %w", plantstore.ErrOutcomeUnknown, err)
}

// add hands over batch j.seq, committed or not; the flusher answers its
// Creates, if any, once it is flushed.
func (f *flusher) add(j flushJob) {
	f.mu.Lock()
	f.pending = append(f.pending, j)
	f.creates += len(j.reqs)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run flushes and answers the batches handed over until stop is closed
// and none is left.
func (f *flusher) run(committed func(n int, took time.Duration)) {
	defer close(f.stopped)
	var jobs []flushJob
	for {
		select {
		case <-f.wake:
		case <-f.stop:
			// The committer has returned: nothing more comes.
			select {
			case <-f.wake:
			default:
				return
			}
		}
		f.mu.Lock()
		jobs, f.pending = f.pending, jobs[:0]
		f.mu.Unlock()
		if len(jobs) == 0 {
			continue
		}
		err := f.flush(f.datasync)
		now := time.Now()
		f.mu.Lock()
		for _, j := range jobs {
			f.creates -= len(j.reqs)
		}
		f.mu.Unlock()
		if err == nil {
			f.advance(jobs[len(jobs)-1].seq)
		}
		for _, j := range jobs {
			if err != nil {
				for i := range j.errs {
					j.errs[i] = flushError(err)
				}
			}
			if j.end != nil {
				j.end(batchOutcome(j.errs))
			}
			if committed != nil {
				committed(len(j.reqs), now.Sub(j.start))
			}
			for i, r := range j.reqs {
				r.done <- j.errs[i]
			}
		}
		clear(jobs)
	}
}

// unanswered returns the number of Creates handed over and not yet
// answered.
func (f *flusher) unanswered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}

// await returns once every batch handed over so far has been flushed, or
// ctx's error if it ends first.
func (f *flusher) await(ctx context.Context) error {
	f.mu.Lock()
	target := f.committed
	for f.flushed < target {
		c := f.advanced
		f.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	f.mu.Unlock()
	return nil
}

// close waits for the flusher to answer what it holds, after the
// committer has returned, then closes the connection and the file.
func (f *flusher) close() {
	close(f.stop)
	<-f.stopped
	discard(f.conn)
	f.release()
	f.wal.Close()
}
