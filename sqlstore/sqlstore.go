// Package sqlstore keeps plants in SQLite or PostgreSQL through
// [database/sql]. It implements [plantstore.Storage], [plantstore.Pinger],
// [plantstore.WriteProber] and [plantstore.Outbox].
//
// This package imports no driver: the caller imports one, and names it to
// [OpenSQLite] or [OpenPostgres], which open the database as the
// cmd/plantstore binary does, the Store owning the *sql.DB:
//
//	s, err := sqlstore.OpenSQLite(ctx, "sqlite", "plants.db") // modernc.org/sqlite; refuses others' files
//	defer s.Close()
//	ps := plantstore.New(s)
//
// or opens the *sql.DB itself, and keeps ownership of it:
//
//	err := sqlstore.PrepareSQLiteFile(ctx, "sqlite", "plants.db")
//	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN("plants.db"))
//	s, err := sqlstore.Open(ctx, db, sqlstore.SQLite)
//
// # Durability
//
// A nil error from [Store.Create] means the plant is committed and flushed
// to stable storage: it survives a crash of the process and, as far as the
// disk honours fsync, a loss of power. On SQLite this needs WAL mode with
// synchronous=FULL on every connection, which [SQLiteDSN] sets; on
// PostgreSQL it needs fsync=on and synchronous_commit other than off. [Open]
// checks these settings and fails with [ErrNotDurable] when they are weaker.
// On Linux, the SQLite group committer holds one connection of its own,
// which commits with synchronous=NORMAL, and flushes the WAL file itself
// before it answers (beside the next batch where the flush is slow); the
// other connections keep synchronous=FULL, and [Store.Plant] and
// [Store.List] wait for that flush before they show a plant. That
// connection outlives a Close of the *sql.DB, until [Store.Close].
//
// # Group commit
//
// By default concurrent Creates are batched: a committer goroutine takes
// every Create that is waiting (up to 256) and stores them in one
// transaction, so that many callers share one flush. Each caller still gets
// its own result. The committer waits up to 2 ms for as many Creates as it
// expects callers, a number it learns from its last batches, or for half
// as many where its flush runs beside the next batch; the policy and its
// measurements are in docs/storage.md, under "Group commit".
// [WithoutGroupCommit] makes each Create its own transaction. On
// PostgreSQL, a batch and its events are one statement that is its own
// transaction: one round trip, not three; where the lock timeout is set
// in each transaction ([WithLockTimeout] through a pooler), and without
// group commit, a Create takes BEGIN, the statements and COMMIT.
//
// # Webhook outbox
//
// A Store opened [WithOutbox] keeps the events and the state of each
// (event, subscriber) delivery in the database, so that the webhook
// dispatchers of every process on one database, PostgreSQL or a SQLite
// file, share the work: a delivery is claimed with a lease
// ([Store.Claim]), renewed while its owner lives ([Store.Extend]), and
// claimed by another owner once the lease expires. Each batch of claims,
// acks or retries is one transaction. The Store also records which runs
// of the dispatchers live ([Store.Beat]), so that an instance restarted
// after a crash takes back at once the leases of its previous run, once
// that run's record has expired, and never those of a live run of the
// same name ([Store.TakeBack]).
//
// # Errors
//
// A taken id is an error wrapping [plantstore.ErrConflict], a missing one
// [plantstore.ErrNotFound]. When the database cannot be reached or fails
// before answering, the error wraps [plantstore.ErrUnavailable] and nothing
// of the call is kept. When the connection is lost, a deadline passes or
// the caller's context ends after a COMMIT (or a batch's one statement)
// was sent and before its answer came, the outcome is unknown to any
// database client: a Create or Delete then returns an error wrapping
// [plantstore.ErrOutcomeUnknown], never ErrUnavailable (a retried Create
// may report ErrConflict). When the caller's context ends first, the
// error wraps the context's error.
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore"
)

// A Dialect names the SQL database behind a *sql.DB.
type Dialect int

// The dialects a Store speaks.
const (
	// SQLite is SQLite 3.37 or later (modernc.org/sqlite, for example),
	// opened with [SQLiteDSN].
	SQLite Dialect = iota + 1
	// Postgres is PostgreSQL 11 or later (github.com/jackc/pgx/v5/stdlib,
	// for example), in a database with server_encoding UTF8.
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// maxBatch bounds the number of Creates one group commit stores.
const maxBatch = 256

// DefaultTimeout is how long a call waits for the database unless
// [WithTimeout] says otherwise.
const DefaultTimeout = 5 * time.Second

// An Option configures a Store.
type Option func(*config)

type config struct {
	group     bool
	outbox    bool
	outboxMax int // see WithOutboxMaxPending; 0: no bound
	timeout   time.Duration
	lockWait  time.Duration // see WithLockTimeout; 0: none
	idleInTx  time.Duration // see WithIdleInTransactionTimeout; 0: none
	hooks     Hooks
	logger    *slog.Logger // see WithLogger; nil: slog.Default()

	// flushDelay is added to every flush of a group commit (before the
	// flusher's, or before COMMIT, holding the write lock, where SQLite
	// flushes), to model a disk whose flush is slow; flushFile, when set,
	// flushes the WAL file in the flusher's stead; beside hands every batch
	// to the flusher; noFlusher leaves the flush to SQLite. Only this
	// package's tests and benchmarks set them.
	flushDelay time.Duration
	flushFile  func(*os.File) error
	noFlusher  bool
	beside     bool // hand every batch to the flusher
}

// WithLockTimeout makes every write transaction of the Store on
// PostgreSQL give up waiting for a row lock after d (lock_timeout), with
// an error wrapping [plantstore.ErrUnavailable]: a Create of an id that
// another process's transaction is inserting waits for that transaction
// only this long. It is set within each transaction (SET LOCAL), at a
// round trip each, so that it holds through a connection pooler in
// transaction mode, which keeps no session settings and refuses them at
// connect time. Where the connection is the session's own, setting
// lock_timeout when connecting (pgx: a lock_timeout parameter in the URL)
// costs nothing per transaction: [OpenPostgres] does so with d, and sets
// it per transaction only where the connection refuses that. Set in each
// transaction, it makes a batch of Creates three statements where it
// would be one (see the package documentation, "Group commit"). A d of
// zero or less, the default, sets nothing. SQLite waits for its file lock
// by the DSN's busy timeout instead.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) { c.lockWait = max(d, 0) }
}

// WithIdleInTransactionTimeout makes PostgreSQL end the session of any
// write transaction of the Store that sits idle, between two statements,
// for longer than d (idle_in_transaction_session_timeout): a process that
// is stopped or frozen mid-transaction, never to send its next statement
// in time, is cut off by the server, and the row locks it held are
// released to the other processes. Its transaction rolls back. Like
// [WithLockTimeout], it is set within each transaction, for poolers, or by
// [OpenPostgres] when connecting; a d of zero or less, the default, sets
// nothing.
func WithIdleInTransactionTimeout(d time.Duration) Option {
	return func(c *config) { c.idleInTx = max(d, 0) }
}

// WithTimeout bounds how long each call waits for the database, from the
// moment it is made: waiting for its turn to write, for a connection and
// for every statement, its commit included. A call that runs out of time
// returns an error wrapping [plantstore.ErrUnavailable] when nothing of it
// can have been kept, and [plantstore.ErrOutcomeUnknown] when its COMMIT
// was in flight. Under group commit, a batch ends by the earliest deadline
// of the Creates in it, so that no caller waits longer than d for a batch
// stuck on a stalled database; a Create with less than a quarter of d
// left when its batch starts is answered ErrUnavailable at once, storing
// nothing, rather than cut the batch short for the others. A d of zero or less leaves the default,
// [DefaultTimeout].
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithoutGroupCommit makes every Create its own transaction, run on the
// caller's goroutine, instead of batching concurrent Creates.
func WithoutGroupCommit() Option {
	return func(c *config) { c.group = false }
}

// WithOutbox makes every Create also record a [plantstore.Event] in the
// same transaction as the plant, for delivery through the
// [plantstore.Outbox] methods ([Store.FanOut], [Store.Claim], …). Without
// it no events are recorded.
//
// Recording events takes no lock beyond the rows written: on PostgreSQL,
// the transactions of any number of Stores commit concurrently, in any
// order, and [Store.FanOut] takes each event once it has committed,
// whenever that is.
func WithOutbox() Option {
	return func(c *config) { c.outbox = true }
}

// A Store is a [plantstore.Storage] over a *sql.DB. It is safe for
// concurrent use. Several Stores, in one process or many, may share one
// PostgreSQL database; each id is still taken at most once.
type Store struct {
	db      *sql.DB
	ownsDB  bool // opened by OpenSQLite or OpenPostgres: Close closes db
	dialect Dialect
	cfg     config
	q       queries

	// writeSem serialises this process's SQLite writers, so that they
	// queue here instead of polling the file lock. It is nil on PostgreSQL,
	// which has row locks.
	writeSem chan struct{}

	dropped atomic.Uint64 // outbox events dropped undelivered; see WithOutboxMaxPending

	// wary is set when a one-statement batch on PostgreSQL fails after
	// sending anything, and cleared when a batch commits: until then
	// batches take three statements again (see insertOne).
	wary atomic.Bool

	// guarded counts the one-statement batches on PostgreSQL still to
	// skip taken ids with ON CONFLICT after one found an id taken (see
	// insertOne). The committer's alone.
	guarded int

	probeID int64       // this Store's row of write_probe; see ProbeWrite
	probed  atomic.Bool // whether ProbeWrite may have written it

	// insertStmts holds the prepared inserts, by what they insert, and is
	// nil once closed. Close takes stmtUse to close them once no insert
	// uses them; stmtMu guards the map among inserts.
	stmtUse     sync.RWMutex
	stmtMu      sync.Mutex
	insertStmts map[insertKey]*sql.Stmt

	fl        *flusher          // on SQLite with group commit; see flusher
	reqs      chan *createReq   // to the committer; unbuffered
	joined    []context.Context // the committer's, for the Batch hook
	closed    chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
}

var (
	_ plantstore.Storage     = (*Store)(nil)
	_ plantstore.Pinger      = (*Store)(nil)
	_ plantstore.WriteProber = (*Store)(nil)
	_ plantstore.Outbox      = (*Store)(nil)
)

// Open returns a Store keeping plants in db, which speaks dialect. It checks
// the durability settings, then creates the schema or migrates it to the
// current version in one transaction; opening a database already at the
// current version changes nothing. Concurrent Opens of one database are
// safe. The caller keeps ownership of db: [Store.Close] does not close it.
//
// On SQLite, Open refuses a database that has tables but no plantstore
// schema, or another application's ID, before it writes to it; the DSN has
// switched the file to WAL by then, so call [PrepareSQLiteFile] before
// sql.Open to leave such a file untouched.
//
// Errors: [ErrReadOnly] when this process cannot write to the database;
// [ErrNotDurable] when the database would not make a commit durable;
// [ErrNotPlantstore] when it holds another application's data;
// [ErrSchemaTooNew] when the database was migrated by a later version of
// this package; an error wrapping [plantstore.ErrUnavailable] when the
// database cannot be reached; any other failure, wrapped.
func Open(ctx context.Context, db *sql.DB, dialect Dialect, opts ...Option) (*Store, error) {
	if dialect != SQLite && dialect != Postgres {
		return nil, fmt.Errorf("sqlstore: unknown dialect %v", dialect)
	}
	s := &Store{
		db:          db,
		dialect:     dialect,
		cfg:         config{group: true, timeout: DefaultTimeout},
		q:           newQueries(dialect),
		probeID:     newProbeID(),
		reqs:        make(chan *createReq),
		insertStmts: make(map[insertKey]*sql.Stmt),
		closed:      make(chan struct{}),
		stopped:     make(chan struct{}),
	}
	for _, o := range opts {
		o(&s.cfg)
	}
	if dialect == Postgres {
		s.q.setTimeouts = setTimeouts(s.cfg.lockWait, s.cfg.idleInTx)
	}
	if dialect == SQLite {
		s.writeSem = make(chan struct{}, 1)
	}
	if err := checkSettings(ctx, db, dialect); err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, dialect, migrations); err != nil {
		return nil, err
	}
	if s.cfg.group && dialect == SQLite && !s.cfg.noFlusher {
		fl, err := openFlusher(ctx, db)
		if err != nil {
			return nil, failure(ctx, "prepare the committer", err)
		}
		if fl != nil {
			fl.delay = s.cfg.flushDelay
			fl.logger = cmp.Or(s.cfg.logger, slog.Default())
			fl.always = s.cfg.beside
			if s.cfg.flushFile != nil {
				wal := fl.wal
				fl.datasync = func() error { return s.cfg.flushFile(wal) }
				fl.plain = fl.datasync
			}
		}
		s.fl = fl
	}
	if s.cfg.group {
		go s.commitLoop()
	} else {
		close(s.stopped)
	}
	return s, nil
}

// Close stops the Store's background work, after storing the Creates it
// has already taken. Later Creates return an error wrapping
// [plantstore.ErrUnavailable]. It closes the *sql.DB only when
// [OpenSQLite] or [OpenPostgres] opened it, and then returns the error of
// its Close; otherwise it leaves the *sql.DB to its caller and returns
// nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	<-s.stopped
	s.stmtUse.Lock()
	for _, st := range s.insertStmts {
		st.Close()
	}
	s.insertStmts = nil
	s.stmtUse.Unlock()
	s.dropProbeRow()
	if s.ownsDB {
		return s.db.Close()
	}
	return nil
}

// Ping implements [plantstore.Pinger]: it returns nil when the database
// answers, or an error wrapping [plantstore.ErrUnavailable].
func (s *Store) Ping(ctx context.Context) (err error) {
	ctx, track := s.track(ctx, OpPing)
	defer track.done(&err)
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := s.db.PingContext(dctx); err != nil {
		return failure(ctx, "ping", err)
	}
	return nil
}

// Plant implements [plantstore.Storage.Plant].
func (s *Store) Plant(ctx context.Context, id int64) (_ plantstore.Plant, err error) {
	ctx, track := s.track(ctx, OpRead)
	defer track.done(&err)
	var (
		name string
		tag  sql.NullString
	)
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	err = s.db.QueryRowContext(dctx, s.q.plant, id).Scan(&name, &tag)
	if errors.Is(err, sql.ErrNoRows) {
		return plantstore.Plant{}, plantstore.ErrNotFound
	}
	if err != nil {
		return plantstore.Plant{}, failure(ctx, "read plant", err)
	}
	if err := s.flushed(dctx); err != nil {
		return plantstore.Plant{}, failure(ctx, "read plant", err)
	}
	return plantstore.Plant{ID: id, Name: name, Tag: tag.String, HasTag: tag.Valid}, nil
}

// List implements [plantstore.Storage.List]. It reads limit rows of the
// primary key index from from on.
func (s *Store) List(ctx context.Context, from int64, limit int) (_ []plantstore.Plant, err error) {
	ctx, track := s.track(ctx, OpList)
	defer track.done(&err)
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(dctx, s.q.list, from, limit)
	if err != nil {
		return nil, failure(ctx, "list plants", err)
	}
	defer rows.Close()
	plants := make([]plantstore.Plant, 0, min(limit, 64))
	for rows.Next() {
		var (
			p   plantstore.Plant
			tag sql.NullString
		)
		if err := rows.Scan(&p.ID, &p.Name, &tag); err != nil {
			return nil, failure(ctx, "list plants", err)
		}
		p.Tag, p.HasTag = tag.String, tag.Valid
		plants = append(plants, p)
	}
	if err := rows.Err(); err != nil {
		return nil, failure(ctx, "list plants", err)
	}
	if err := s.flushed(dctx); err != nil {
		return nil, failure(ctx, "list plants", err)
	}
	return plants, nil
}

// Delete implements [plantstore.Storage.Delete]. It returns an error
// wrapping [plantstore.ErrOutcomeUnknown] when the connection was lost
// while its COMMIT was in flight.
func (s *Store) Delete(ctx context.Context, id int64) (err error) {
	ctx, track := s.track(ctx, OpDelete)
	defer track.done(&err)
	dctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := s.lockWrites(dctx); err != nil {
		return failure(ctx, "delete plant", err)
	}
	defer s.unlockWrites()
	// An explicit transaction, not an autocommit statement: a driver that
	// answers a cancelled ctx by dropping the connection leaves a
	// statement waiting on the server, which would still commit on its own
	// once it got its lock. A transaction commits only when told to.
	tx, err := s.begin(dctx)
	if err != nil {
		return failure(ctx, "delete plant", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(dctx, s.q.delete, id)
	if err != nil {
		return failure(ctx, "delete plant", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return failure(ctx, "delete plant", err)
	}
	if n == 0 {
		return plantstore.ErrNotFound
	}
	if err := commit(dctx, tx); err != nil {
		return failure(ctx, "delete plant", err)
	}
	return nil
}

// flushed returns once every Create committed so far is flushed (see
// [flusher]), or ctx's error if it ends first.
func (s *Store) flushed(ctx context.Context) error {
	if s.fl == nil {
		return nil
	}
	return s.fl.await(ctx)
}

// begin begins a transaction that writes, and on PostgreSQL sets its lock
// and idle timeouts (see [WithLockTimeout]).
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil || s.q.setTimeouts == "" {
		return tx, err
	}
	if _, err := tx.ExecContext(ctx, s.q.setTimeouts); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// setTimeouts returns the statement that sets lock_timeout and
// idle_in_transaction_session_timeout for the rest of a PostgreSQL
// transaction, or "" when neither is set.
func setTimeouts(lockWait, idleInTx time.Duration) string {
	var set []string
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"lock_timeout", lockWait}, {"idle_in_transaction_session_timeout", idleInTx}} {
		if t.d > 0 {
			ms := max(t.d.Milliseconds(), 1)
			set = append(set, fmt.Sprintf("set_config('%s', '%d', true)", t.name, ms))
		}
	}
	if len(set) == 0 {
		return ""
	}
	return "SELECT " + strings.Join(set, ", ")
}

// bounded returns ctx limited to the Store's timeout. Failures are still
// judged against ctx, so that the Store's own deadline reads as the
// database being unavailable, not as the caller giving up.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.timeout)
}

// lockWrites waits for this Store's turn to write to SQLite, or for ctx to
// end. On PostgreSQL it returns at once.
func (s *Store) lockWrites(ctx context.Context) error {
	if s.writeSem == nil {
		return nil
	}
	select {
	case s.writeSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sqlstore: wait to write: %w", ctx.Err())
	}
}

func (s *Store) unlockWrites() {
	if s.writeSem != nil {
		<-s.writeSem
	}
}
