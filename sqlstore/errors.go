package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/plantstore/plantstore"
)

var (
	// ErrNotDurable reports that the database is configured so that a
	// commit could be lost in a crash: on SQLite, a connection not in WAL
	// mode with synchronous=FULL and a busy timeout (open it with
	// [SQLiteDSN]); on PostgreSQL, fsync or synchronous_commit off.
	ErrNotDurable = errors.New("sqlstore: database settings do not make commits durable")

	// ErrSchemaTooNew reports that the database was migrated by a later
	// version of this package, whose schema this one does not know.
	ErrSchemaTooNew = errors.New("sqlstore: database schema is newer than this program")

	// ErrNotPlantstore reports a SQLite database that holds another
	// application's data, or a file that is not a SQLite database at all:
	// plantstore refuses it rather than add its tables to it. See
	// [PrepareSQLiteFile].
	ErrNotPlantstore = errors.New("sqlstore: not a plantstore database")

	// ErrReadOnly reports a database that this process can read but not
	// write: a SQLite file it may not write, or a PostgreSQL session that
	// is read-only (a standby, or default_transaction_read_only on).
	ErrReadOnly = errors.New("sqlstore: database is read-only")

	// ErrStatementsLost reports a PostgreSQL connection that loses its
	// prepared statements between transactions, as one through a pooler
	// in transaction mode (PgBouncer's pool_mode = transaction) does, used
	// by a driver that keeps named prepared statements across them, as
	// pgx does by default. Use a query mode that prepares no named
	// statement (pgx: default_query_exec_mode=exec in the URL), or session
	// pooling. [Open] checks for it; a call that meets it later returns an
	// error wrapping both ErrStatementsLost and [plantstore.ErrUnavailable].
	ErrStatementsLost = errors.New("sqlstore: the connection loses prepared statements between transactions, as through a pooler in transaction mode: use a query mode without named prepared statements (pgx: default_query_exec_mode=exec) or session pooling")

	// errClosed is what Create returns once the Store is closed.
	errClosed = fmt.Errorf("sqlstore: store closed: %w", plantstore.ErrUnavailable)
)

// failure wraps err, the failure of op, with what it means for the caller:
// [plantstore.ErrOutcomeUnknown] when [commitError] found the outcome
// unknown, else the context's error when ctx has ended, [plantstore.ErrUnavailable] when
// the database could not be reached or failed before answering, or else
// err alone.
func failure(ctx context.Context, op string, err error) error {
	if errors.Is(err, plantstore.ErrOutcomeUnknown) {
		return fmt.Errorf("sqlstore: %s: %w", op, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("sqlstore: %s: %w", op, ctxErr)
	}
	if !transient(err) {
		return fmt.Errorf("sqlstore: %s: %w", op, err)
	}
	if statementsLost(err) {
		return fmt.Errorf("sqlstore: %s: %v: %w: %w", op, err, ErrStatementsLost, plantstore.ErrUnavailable)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A deadline of the driver's own, such as a connect timeout: the
		// caller's context is live, so the context errors must not be
		// reachable from what is returned.
		return fmt.Errorf("sqlstore: %s: %v: %w", op, err, plantstore.ErrUnavailable)
	}
	return fmt.Errorf("sqlstore: %s: %w: %w", op, err, plantstore.ErrUnavailable)
}

// commitError returns what err, the failure of a Commit, means: err itself
// when the transaction certainly did not commit, and otherwise (a
// connection lost or a deadline passed while the COMMIT was in flight) an
// error wrapping [plantstore.ErrOutcomeUnknown], which [failure] passes on
// as it is: never ErrUnavailable, whose promise that nothing was kept
// cannot be given, nor the context's error.
func commitError(err error) error {
	if rolledBack(err) {
		return err
	}
	return fmt.Errorf("commit: %v: %w", err, plantstore.ErrOutcomeUnknown)
}

// errNothingSent marks the failure of a one-statement batch that sent
// nothing (see insertOne).
var errNothingSent = errors.New("nothing sent")

// statementError returns what err, the failure of a statement that is a
// transaction of its own, means: as commitError (the context's own error
// too: pgx returns it when the context ended with the statement in
// flight), except that an error from before anything was sent, which the
// driver marks, wraps errNothingSent.
func statementError(err error) error {
	var retry interface{ SafeToRetry() bool }
	if errors.Is(err, driver.ErrBadConn) || errors.As(err, &retry) && retry.SafeToRetry() {
		return fmt.Errorf("%w: %w", errNothingSent, err)
	}
	return commitError(err)
}

// commit commits tx, begun with ctx, and returns nil or what its failure
// means (see commitError). A context that has ended before the COMMIT is
// sent leaves the transaction uncommitted, and its error is returned as
// it is. One that ends after that check is outcome unknown, as commitError
// judges the context's own error: database/sql returns it when it finds
// the context ended before sending the COMMIT, but so does pgx when the
// context ends with the COMMIT in flight.
func commit(ctx context.Context, tx *sql.Tx) error {
	if err := ctx.Err(); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return commitError(err)
	}
	return nil
}

// rolledBack reports whether err, returned by a Commit, means that the
// transaction did not commit.
func rolledBack(err error) bool {
	// After a rollback (database/sql's own, when the transaction's context
	// ended) database/sql returns ErrTxDone. The context's own error is no
	// proof of a rollback (see commit): it falls to "unknown" below.
	if errors.Is(err, sql.ErrTxDone) {
		return true
	}
	// pgx's SafeToRetry is not asked: it answers true for "conn closed"
	// even when the connection closed while reading the COMMIT's answer.
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		// The server answered the COMMIT. Only a shutdown or a broken
		// connection (classes 57 and 08) can arrive after it committed, and
		// 40003 says outright that the outcome is unknown (CockroachDB
		// answers it for an ambiguous commit).
		state := pg.SQLState()
		return !strings.HasPrefix(state, "57") && !strings.HasPrefix(state, "08") && state != "40003"
	}
	if code, ok := sqliteCode(err); ok {
		// SQLite rolls back a COMMIT that fails for want of the lock or of
		// space; after an I/O error the journal decides on the next open.
		return code != 10 // SQLITE_IOERR
	}
	return false
}

// transient reports whether err means the database could not be reached or
// could not serve the request now, as opposed to rejecting it. Errors that
// carry a database error code are judged by it; every other error
// (driver.ErrBadConn, sql.ErrConnDone, network errors, io.EOF, timeouts)
// comes from the connection and is transient.
func transient(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		state := pg.SQLState()
		if len(state) < 2 {
			return true
		}
		switch state[:2] {
		case "08", // connection exception
			"40", // transaction rollback: serialization failure, deadlock
			"53", // insufficient resources: disk full, too many connections
			"57", // operator intervention: shutdown, statement timeout
			"58": // system error: I/O error
			return true
		}
		return state == "55P03" || // lock not available
			// A read-only transaction: the server is a standby, or a
			// primary that restarts read-only after a crash before it
			// promotes itself again, as Patroni's leader does (while its
			// /primary check still answers 200). The write was refused:
			// nothing was kept.
			state == "25006" ||
			statementsLost(err)
	}
	if code, ok := sqliteCode(err); ok {
		switch code {
		case sqliteBusy,
			6,  // SQLITE_LOCKED
			7,  // SQLITE_NOMEM
			8,  // SQLITE_READONLY
			9,  // SQLITE_INTERRUPT
			10, // SQLITE_IOERR
			13, // SQLITE_FULL
			14, // SQLITE_CANTOPEN
			15: // SQLITE_PROTOCOL
			return true
		}
		return false
	}
	return true
}

// statementsLost reports whether err is PostgreSQL's answer to a named
// prepared statement that the session does not have (26000) or has
// already (42P05): the connection's session changed under it, as through
// a pooler in transaction mode. See [ErrStatementsLost].
func statementsLost(err error) bool {
	var pg interface{ SQLState() string }
	if !errors.As(err, &pg) {
		return false
	}
	state := pg.SQLState()
	return state == "26000" || state == "42P05"
}

// sqliteBusy is SQLite's SQLITE_BUSY result code.
const sqliteBusy = 5

// sqliteCode returns the primary result code of a SQLite error, or false
// when err carries none.
func sqliteCode(err error) (int, bool) {
	var lite interface{ Code() int }
	if !errors.As(err, &lite) {
		return 0, false
	}
	return lite.Code() & 0xff, true
}
