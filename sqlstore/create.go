package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/plantstore/plantstore"
)

// errNoTimeLeft answers a Create that waited for its turn to commit until
// too little of its timeout was left for a commit.
var errNoTimeLeft = fmt.Errorf("sqlstore: create plant: too little time left to commit: %w", plantstore.ErrUnavailable)

// A createReq is one Create waiting for the committer.
type createReq struct {
	ctx      context.Context // the caller's, for the Batch hook
	plant    plantstore.Plant
	deadline time.Time  // by when the caller must have its answer
	done     chan error // buffered: the committer never waits on a caller
}

// Create implements [plantstore.Storage.Create]. A nil error means the plant
// is committed and durable (see the package documentation).
//
// With group commit, a Create whose ctx ends, or whose timeout (see
// [WithTimeout]) passes, before the committer takes it stores nothing;
// once taken, Create waits for its batch's outcome, which comes by the
// earliest deadline in the batch. Errors: an
// error wrapping [plantstore.ErrConflict] when p.ID is taken (by a plant
// stored before, or by an earlier Create in the same batch);
// [plantstore.ErrOutcomeUnknown] when the connection was lost or the
// batch's deadline passed while its COMMIT (on PostgreSQL, its one
// statement: see insertOne) was in flight, so that the plant
// may or may not be stored; [plantstore.ErrUnavailable] when the database
// cannot be reached, when the batch failed as a whole before committing, or
// after [Store.Close]; the context's error; any other failure, wrapped.
func (s *Store) Create(ctx context.Context, p plantstore.Plant) (err error) {
	ctx, track := s.track(ctx, OpCreate)
	defer track.done(&err)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: create plant: %w", err)
	}
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	if !s.cfg.group {
		dctx, cancel := s.bounded(ctx)
		defer cancel()
		if err := s.lockWrites(dctx); err != nil {
			return failure(ctx, "create plant", err)
		}
		defer s.unlockWrites()
		errs, _ := s.insert(dctx, ctx, []*createReq{{plant: p}})
		return errs[0]
	}
	r := &createReq{ctx: ctx, plant: p, deadline: time.Now().Add(s.cfg.timeout), done: make(chan error, 1)}
	wait := time.NewTimer(s.cfg.timeout)
	defer wait.Stop()
	select {
	case s.reqs <- r:
		return <-r.done
	case <-ctx.Done():
		return fmt.Errorf("sqlstore: create plant: %w", ctx.Err())
	case <-wait.C:
		return fmt.Errorf("sqlstore: create plant: no turn to commit within %v: %w", s.cfg.timeout, plantstore.ErrUnavailable)
	case <-s.closed:
		return errClosed
	}
}

// maxPreparedBatch is the largest batch whose insert statement SQLite
// connections keep prepared (see insertStmt); a larger batch is inserted
// in chunks of it, and the rest, in its one transaction. Parsing a
// larger batch's statement anew each time made a batch of 256 plants cost
// the committer 2.4 ms on this VM, where four prepared chunks cost 1.0 ms,
// and a batch of 128 1.05 ms where two chunks cost 0.51 ms
// (BenchmarkInsertBatch, -cpu 1, six alternating runs of each build); at
// 512 HTTP connections, where batches hold about 90 plants, the
// committer's share of the binary's core fell from 22 % to 10 % (CPU
// profiles; docs/performance.md, "Durable creates"). With the outbox,
// the events go in prepared chunks too, where none of the batch's ids is
// taken: a batch of 256 then cost 1.7 ms where it had cost 2.1 ms, one of
// 16 0.17 ms where it had cost 0.20 ms.
const maxPreparedBatch = 64

// commitBatch stores batch in one transaction and answers its Creates.
// With a flusher, beside says whether the flusher flushes the commit and
// answers them (see [flusher]), or commitBatch flushes it itself.
func (s *Store) commitBatch(batch []*createReq, beside bool) {
	// A Create that has spent most of its time waiting for its turn would
	// cut the batch short for every other: it is answered now, having
	// stored nothing, and the batch ends by the earliest deadline of the
	// rest.
	now := time.Now()
	late := now.Add(s.cfg.timeout / 4)
	kept := batch[:0]
	var deadline time.Time
	for _, r := range batch {
		if r.deadline.Before(late) {
			r.done <- errNoTimeLeft
			continue
		}
		if len(kept) == 0 || r.deadline.Before(deadline) {
			deadline = r.deadline
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return
	}
	batch = kept
	start := time.Now()
	end := s.batchStarted(batch)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var (
		errs      []error
		committed bool
		seq       uint64
	)
	fl := s.fl
	if fl != nil && fl.lost {
		fl = nil
	}
	if fl != nil {
		// Before COMMIT: a read that can see the batch waits for its flush.
		seq = fl.begin()
	}
	if err := s.lockWrites(ctx); err != nil {
		// The batch's own deadline passed: the database is unavailable.
		err = failure(context.Background(), "create plant", err)
		errs = make([]error, len(batch))
		for i := range errs {
			errs[i] = err
		}
	} else {
		// The batch's own deadline is not a caller's: when it passes, the
		// database has not answered, which is unavailability.
		errs, committed = s.insert(ctx, context.Background(), batch)
		s.unlockWrites()
	}
	if !committed && fl != nil {
		// A batch that failed may have lost the committer's connection.
		fl.gone(ctx)
	}
	switch {
	case fl != nil && beside:
		j := flushJob{seq: seq}
		if committed {
			j = flushJob{seq: seq, reqs: slices.Clone(batch), errs: errs, end: end, start: start}
		}
		fl.add(j)
		// Let the flusher start the flush now, not after every goroutine
		// the next batch's first Creates make ready.
		runtime.Gosched()
		if committed {
			return
		}
	case fl != nil:
		if err := fl.flushNow(seq); err != nil && committed {
			for i := range errs {
				errs[i] = flushError(err)
			}
		}
	}
	if s.cfg.hooks.Committed != nil {
		s.cfg.hooks.Committed(len(batch), time.Since(start))
	}
	if end != nil {
		end(batchOutcome(errs))
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// insert stores the plants of reqs in one transaction and returns each
// one's outcome, in order: nil, ErrConflict for a taken id (the first of
// several with one id wins), or, when the transaction failed, the same
// error for all: one wrapping ErrOutcomeUnknown when the commit was sent
// but not answered. Any other failure is reported as the caller's when
// callerCtx has ended. It also reports whether the transaction committed.
func (s *Store) insert(ctx, callerCtx context.Context, reqs []*createReq) ([]error, bool) {
	errs := make([]error, len(reqs))

	// Insert in ascending id order, so that concurrent transactions
	// inserting overlapping ids lock them in one order and cannot
	// deadlock. Later duplicates within reqs are conflicts outright.
	order := make([]int, 0, len(reqs))
	seen := make(map[int64]struct{}, len(reqs))
	for i, r := range reqs {
		if _, dup := seen[r.plant.ID]; dup {
			errs[i] = plantstore.ErrConflict
			continue
		}
		seen[r.plant.ID] = struct{}{}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].plant.ID, reqs[b].plant.ID) })

	inserted, err := s.insertTx(ctx, reqs, order)
	if err != nil {
		err = failure(callerCtx, "create plant", err)
		for i := range errs {
			errs[i] = err
		}
		return errs, false
	}
	for _, i := range order {
		if !inserted[reqs[i].plant.ID] {
			errs[i] = plantstore.ErrConflict
		}
	}
	return errs, true
}

// insertTx inserts the plants reqs[order[0]], reqs[order[1]], ..., whose
// ids are distinct, and returns the ids it inserted. A failure of the
// commit itself is judged by commitError.
func (s *Store) insertTx(ctx context.Context, reqs []*createReq, order []int) (map[int64]bool, error) {
	if s.dialect == Postgres && s.cfg.group && s.cfg.lockWait == 0 && !s.wary.Load() {
		inserted, err := s.insertOne(ctx, reqs, order)
		if err != nil && !errors.Is(err, errNothingSent) {
			s.wary.Store(true)
		}
		return inserted, err
	}
	s.stmtUse.RLock()
	defer s.stmtUse.RUnlock()
	// On SQLite the plants go in prepared chunks of at most
	// maxPreparedBatch: whole chunks, then the rest; so do their events,
	// as many as the plants unless ids are taken. Those statements are
	// prepared now, before the transaction (see insertStmt); a chunk of
	// another size is parsed.
	n := len(order)
	chunk := max(n, 1)
	if s.dialect == SQLite {
		chunk = min(chunk, maxPreparedBatch)
	}
	for _, events := range []bool{false, true} {
		if events && !s.cfg.outbox {
			break
		}
		for _, m := range []int{chunk, n % chunk} {
			if _, err := s.insertStmt(ctx, insertKey{events, m}); err != nil {
				return nil, err
			}
		}
	}
	var err error
	var tx *sql.Tx
	if s.fl != nil && !s.fl.lost {
		tx, err = s.fl.conn.BeginTx(ctx, nil)
		if err != nil && s.fl.gone(ctx) {
			// Nothing was sent: the batch commits on the pool instead.
			tx, err = s.begin(ctx)
		}
	} else {
		tx, err = s.begin(ctx)
	}
	if err != nil {
		return nil, err
	}
	// After Commit this does nothing; before it, the error that got here
	// is the one to report.
	defer func() { _ = tx.Rollback() }()

	inserted := make(map[int64]bool, n)
	args := make([]any, 0, 4*chunk)
	for part := range slices.Chunk(order, chunk) {
		args = plantArgs(reqs, part, args[:0])
		k := insertKey{false, len(part)}
		var rows *sql.Rows
		if st := s.preparedInsert(k); st != nil {
			rows, err = tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		} else {
			rows, err = tx.QueryContext(ctx, s.q.insert(k), args...)
		}
		if err != nil {
			return nil, err
		}
		if err := insertedIDs(rows, inserted); err != nil {
			return nil, err
		}
	}

	if s.cfg.outbox && len(inserted) > 0 {
		now := time.Now().UnixMicro()
		events := make([]int, 0, len(inserted))
		for _, i := range order {
			if inserted[reqs[i].plant.ID] {
				events = append(events, i)
			}
		}
		for part := range slices.Chunk(events, chunk) {
			args = args[:0]
			for _, i := range part {
				p := reqs[i].plant
				args = append(args, p.ID, p.Name, tagValue(p), now)
			}
			k := insertKey{true, len(part)}
			if st := s.preparedInsert(k); st != nil {
				_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, s.q.insert(k), args...)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if s.cfg.flushDelay > 0 && s.fl == nil {
		time.Sleep(s.cfg.flushDelay)
	}
	if err := commit(ctx, tx); err != nil {
		return nil, err
	}
	s.wary.Store(false)
	return inserted, nil
}

// insertOne is insertTx on PostgreSQL in one statement, the events of
// the outbox inserted by the same statement, as a transaction of its own:
// one round trip instead of three (BEGIN, the insert, COMMIT); two where
// a plain INSERT meets a taken id (see guardedBatches). On this
// VM, a batch of 32 made 1,600 transactions a second by pgbench as three
// statements and 2,400 as one, and the binary 1.29 times the creates/s
// at 32 clients (docs/performance.md, "Durable creates").
//
// Where the outcome of the one statement is in doubt, it is where a
// COMMIT's would be: the error wraps ErrOutcomeUnknown unless the server
// answered with an error that rolls back, or nothing was sent (the
// connection could not be had, or the driver says so: database/sql's
// ErrBadConn, or pgx's SafeToRetry). Where three statements would fail at
// BEGIN, answering "nothing kept", this one leaves the outcome unknown:
// the batches in flight on a connection the database has dropped.
// So after such a failure the Store is wary: its batches take three
// statements until one commits. It needs the session's lock timeout
// (OpenPostgres sets it at connect time): where [WithLockTimeout] sets it
// in each transaction, as through PgBouncer, batches take three
// statements. A timeout for idle transactions has nothing to end here.
// Without group commit, where a Create's statement runs under its
// caller's context, a Create takes three statements: pgx ends a statement
// by a deadline on its connection, not by a cancel request, so a
// statement waiting for a row lock when its caller leaves would still
// commit once the lock is released, where a transaction is left
// uncommitted and the caller told that nothing was kept.
func (s *Store) insertOne(ctx context.Context, reqs []*createReq, order []int) (map[int64]bool, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNothingSent, err)
	}
	defer conn.Close()
	args := plantArgs(reqs, order, make([]any, 0, 3*len(order)+1))
	if s.cfg.outbox {
		args = append(args, time.Now().UnixMicro())
	}
	if s.cfg.flushDelay > 0 {
		// As the commit of insertTx would take it.
		time.Sleep(s.cfg.flushDelay)
	}
	skipTaken := s.guarded > 0
	if skipTaken {
		s.guarded--
	}
	inserted, err := s.queryInserted(ctx, conn, len(order), skipTaken, args)
	if !skipTaken && isUniqueViolation(err) {
		// Nothing was kept: the statement, a transaction of its own,
		// rolled back. Again, skipping the taken ids, for this batch
		// and the next guardedBatches.
		s.guarded = guardedBatches
		inserted, err = s.queryInserted(ctx, conn, len(order), true, args)
	}
	if err != nil {
		return nil, statementError(err)
	}
	return inserted, nil
}

// guardedBatches is how many batches after one that found an id taken
// skip taken ids with ON CONFLICT DO NOTHING from the start. ON CONFLICT
// makes PostgreSQL insert each row speculatively, which costs more than
// the row: a batch of 32 plants made 1,158 to 1,241 transactions a second
// as a plain INSERT and 902 to 985 with ON CONFLICT (pgbench -M extended,
// one client, this VM), and the binary 1.11 to 1.13 times the creates/s
// at 32 clients (two interleaved runs of scripts/loopback-bench.sh, every
// round faster). So a batch is a plain INSERT, which fails as a whole on
// a taken id, keeping nothing, and is then sent again with ON CONFLICT.
// Where ids are often taken, as when clients retry, the batches after
// such a failure skip them from the start: two statements for a batch
// once in guardedBatches+1 at most, and one unique violation in
// PostgreSQL's log for them, not one a batch.
const guardedBatches = 64

// queryInserted runs the one-statement insert of n plants on conn and
// returns the ids it inserted.
func (s *Store) queryInserted(ctx context.Context, conn *sql.Conn, n int, skipTaken bool, args []any) (map[int64]bool, error) {
	query := s.q.insertPlants(n, skipTaken)
	if s.cfg.outbox {
		query = s.q.insertPlantsAndEvents(n, skipTaken)
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	inserted := make(map[int64]bool, n)
	return inserted, insertedIDs(rows, inserted)
}

// isUniqueViolation reports whether err is PostgreSQL's answer that a
// statement would have stored a taken key (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "23505"
}

// plantArgs appends to args the id, name and tag of the plants
// reqs[order[0]], reqs[order[1]], ...
func plantArgs(reqs []*createReq, order []int, args []any) []any {
	for _, i := range order {
		p := reqs[i].plant
		args = append(args, p.ID, p.Name, tagValue(p))
	}
	return args
}

// insertedIDs reads and closes rows, the ids an insert returned, and adds
// them to inserted.
func insertedIDs(rows *sql.Rows, inserted map[int64]bool) error {
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		inserted[id] = true
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// tagValue is p's tag as stored: NULL when p has none.
func tagValue(p plantstore.Plant) sql.NullString {
	return sql.NullString{String: p.Tag, Valid: p.HasTag}
}

// An insertKey names a prepared insert: of n plants, or of n events.
type insertKey struct {
	events bool
	n      int
}

// insertStmt returns the statement that inserts what k names on SQLite,
// or nil on PostgreSQL, whose driver keeps its own, for k.n of 0, and for
// more than maxPreparedBatch rows. Each connection prepares it once per
// key and keeps it (see [sql.Tx.StmtContext]) while database/sql keeps
// the connection open, or until [Store.Close]: parsing each batch's
// statement anew was a large part of a batch's work. The bound keeps what
// a connection holds near 2 MB.
// It takes a connection of its own the first time, so it is called before
// the transaction begins: within it, with the pool exhausted by others'
// transactions, it would wait for a connection none would give back. The
// caller holds s.stmtUse for reading.
func (s *Store) insertStmt(ctx context.Context, k insertKey) (*sql.Stmt, error) {
	if s.dialect != SQLite || k.n < 1 || k.n > maxPreparedBatch {
		return nil, nil
	}
	if s.insertStmts == nil {
		return nil, errClosed
	}
	if st := s.preparedInsert(k); st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, s.q.insert(k))
	if err != nil {
		return nil, err
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if prev := s.insertStmts[k]; prev != nil {
		st.Close()
		return prev, nil
	}
	s.insertStmts[k] = st
	return st, nil
}

// preparedInsert returns the statement insertStmt prepared for k, or nil.
// The caller holds s.stmtUse for reading.
func (s *Store) preparedInsert(k insertKey) *sql.Stmt {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.insertStmts[k]
}
