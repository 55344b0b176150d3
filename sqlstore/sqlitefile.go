package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ApplicationID is what a plantstore SQLite database holds in SQLite's
// application_id header field ("PLNT"), so that plantstore, file(1) and
// other tools can tell its files from other applications'.
const ApplicationID = 0x504c4e54

// PrepareSQLiteFile checks, before the file at path is opened with
// [SQLiteDSN], that it can be plantstore's SQLite database, and changes
// nothing when it cannot: opening with SQLiteDSN switches a file to WAL
// mode, and [Open] adds plantstore's tables, so another application's file
// must be refused first. driverName is the database/sql driver that the
// caller registered for SQLite (modernc.org/sqlite's is "sqlite"); it is
// used only to read the file, read-only, without taking its locks.
//
// A missing file is created empty with mode 0600, so that the database,
// and the -wal and -shm files SQLite gives the same mode, are readable by
// their owner only. An empty file and a SQLite database with no tables are
// accepted and become plantstore's at [Open]; so is a database that carries
// [ApplicationID], or that has plantstore's schema_version and plants
// tables (written before the ID was set, which Open then sets). Anything
// else is refused and left as it was, byte for byte.
//
// PrepareSQLiteFile also checks that the process can write the file and
// create SQLite's -wal and -shm files next to it, because SQLite opens a
// file it cannot write read-only without saying so, and every write would
// then fail.
//
// Errors: one wrapping [ErrNotPlantstore] that says what the file holds;
// an *[fs.PathError] naming the file or directory and the operating
// system's reason (check it with errors.Is against [fs.ErrNotExist],
// [fs.ErrPermission] or the syscall errors, EISDIR for a directory); any
// other failure to read the file, wrapped. None wraps
// [plantstore.ErrUnavailable]: each one needs an operator to act.
func PrepareSQLiteFile(ctx context.Context, driverName, path string) error {
	dir := filepath.Dir(path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("sqlstore: directory of %s: %w", path, err)
		}
		if err := dirWritable(dir); err != nil {
			return fmt.Errorf("sqlstore: cannot create %s: %w", path, err)
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f.Close()
		}
		if errors.Is(err, fs.ErrExist) {
			// Another process created it in the meantime.
			f, err = os.OpenFile(path, os.O_RDWR, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlstore: database file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return fmt.Errorf("sqlstore: database file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return notPlantstoreError(path, fmt.Sprintf("it is not a regular file (mode %v)", fi.Mode()))
	}
	header := make([]byte, 100)
	n, err := io.ReadFull(f, header)
	switch {
	case n == 0 && err == io.EOF:
		// An empty file is a new database to SQLite. Its -wal and -shm
		// still have to be created.
		if err := dirWritable(dir); err != nil {
			return fmt.Errorf("sqlstore: %s: cannot create its -wal and -shm files: %w", path, err)
		}
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && !bytes.HasPrefix(header, []byte(sqliteMagic))):
		return notSQLiteError(path)
	case err != nil:
		return fmt.Errorf("sqlstore: read %s: %w", path, err)
	}

	walExists, err := sideFileWritable(path + "-wal")
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	shmExists, err := sideFileWritable(path + "-shm")
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if err := dirWritable(dir); err != nil {
		return fmt.Errorf("sqlstore: %s: cannot create its -wal and -shm files: %w", path, err)
	}

	found, err := inspectSQLiteFile(ctx, driverName, path, walExists && shmExists)
	if err != nil {
		return fmt.Errorf("sqlstore: read %s: %w", path, err)
	}
	if found != "" {
		return notPlantstoreError(path, found)
	}
	return nil
}

// notSQLiteError returns the error for a file at path whose header is not
// SQLite's.
func notSQLiteError(path string) error {
	return notPlantstoreError(path, fmt.Sprintf("it is not a SQLite database (it does not begin with %q)", strings.TrimSuffix(sqliteMagic, "\x00")))
}

// notPlantstoreError returns an error wrapping [ErrNotPlantstore] that says
// why what, a file's path or "the database", is not plantstore's.
func notPlantstoreError(what, why string) error {
	return &notPlantstoreErr{what: what, why: why}
}

// A notPlantstoreErr is the error notPlantstoreError returns. It has a message
// of its own, since ErrNotPlantstore's text would only repeat it.
type notPlantstoreErr struct {
	what string // a file's path, or "the database"
	why  string // what it holds instead
}

func (e *notPlantstoreErr) Error() string {
	return "sqlstore: " + e.what + " is not a plantstore database: " + e.why
}

func (e *notPlantstoreErr) Unwrap() error { return ErrNotPlantstore }

// sqliteMagic is how every SQLite database file begins.
const sqliteMagic = "SQLite format 3\x00"

// sideFileWritable reports whether the -wal or -shm file at path exists,
// and returns an error when it exists and cannot be opened for writing.
func sideFileWritable(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, f.Close()
}

// inspectSQLiteFile reads the SQLite database at path without writing to
// it or to any file beside it, and returns why it is not plantstore's,
// or "" when it may be. SQLite would create -wal and -shm files for a
// read-only connection to a WAL database that has none; the file is
// therefore read as immutable unless both exist, in which case it is read
// through them, WAL included.
func inspectSQLiteFile(ctx context.Context, driverName, path string, viaWAL bool) (string, error) {
	u := url.URL{Path: path}
	dsn := "file:" + u.EscapedPath() + "?immutable=1"
	if viaWAL {
		dsn = "file:" + u.EscapedPath() + "?mode=ro&_pragma=busy_timeout(" + fmt.Sprint(busyTimeout.Milliseconds()) + ")"
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return whyNotPlantstore(ctx, conn)
}

type rowsQuerier interface {
	querier
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// whyNotPlantstore returns why the SQLite database q reads is not
// plantstore's ("it has table customers and no plantstore schema"), or ""
// when it is empty, carries [ApplicationID], or
// has plantstore's schema.
func whyNotPlantstore(ctx context.Context, q rowsQuerier) (string, error) {
	var id int64
	if err := q.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
		return "", err
	}
	switch uint32(id) {
	case ApplicationID:
		return "", nil
	case 0:
	default:
		return foreignID(uint32(id)), nil
	}
	tables, err := column(ctx, q, `SELECT name FROM sqlite_schema
		WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		ORDER BY name`)
	if err != nil {
		return "", err
	}
	if len(tables) == 0 {
		return "", nil
	}
	plants, err := column(ctx, q, `SELECT name FROM pragma_table_info('plants')`)
	if err != nil {
		return "", err
	}
	version, err := column(ctx, q, `SELECT name FROM pragma_table_info('schema_version')`)
	if err != nil {
		return "", err
	}
	if hasAll(plants, "id", "name", "tag") && hasAll(version, "version") {
		return "", nil
	}
	const most = 10
	list := strings.Join(tables[:min(len(tables), most)], ", ")
	if len(tables) > most {
		list += fmt.Sprintf(" and %d more", len(tables)-most)
	}
	what := "tables"
	if len(tables) == 1 {
		what = "table"
	}
	return fmt.Sprintf("it has %s %s and no plantstore schema", what, list), nil
}

func foreignID(id uint32) string {
	return fmt.Sprintf("its application_id is %#x, plantstore's is %#x", id, ApplicationID)
}

// column returns the first column of every row query returns.
func column(ctx context.Context, q rowsQuerier, query string) ([]string, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

func hasAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if strings.EqualFold(h, w) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
