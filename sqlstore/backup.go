package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrCorrupt reports a SQLite database that fails SQLite's integrity
// check.
var ErrCorrupt = errors.New("sqlstore: database fails its integrity check")

// BackupSQLite writes a consistent copy of the SQLite database db holds
// open (opened with [SQLiteDSN] through the database/sql driver registered
// as driverName) to the new file dst, while other
// connections and processes go on reading and writing it: SQLite's VACUUM
// INTO copies what one read transaction sees, which holds no lock that
// writers wait for in WAL mode. The copy is written to a temporary file
// next to dst, flushed to stable storage, checked with PRAGMA
// integrity_check, and only then linked to dst, so that dst is either
// whole or absent. It has mode 0600, like the database. dst is created
// only if it does not exist, in one step (a hard link, which fails when
// the name is taken), so that of two backups to one dst at a time one
// fails and neither replaces the other's copy; on a file system without
// hard links, an empty dst is created exclusively first and the copy
// renamed over it.
//
// Errors: one wrapping [fs.ErrExist] when dst exists, or is created by
// another backup before this one ends; [ErrCorrupt] when
// the copy fails the integrity check; an *[fs.PathError] for a dst that
// cannot be written; any other failure, wrapped.
func BackupSQLite(ctx context.Context, driverName string, db *sql.DB, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("sqlstore: backup: %s: %w", dst, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-"+strings.ToLower(rand.Text()[:8]))
	// VACUUM INTO creates the file itself; an empty one of mode 0600
	// first gives the copy the database's mode.
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	if err := CheckSQLiteFile(ctx, driverName, tmp); err != nil {
		return err
	}
	if err := placeNew(tmp, dst); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	os.Remove(tmp)
	done = true
	if err := syncFile(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	return nil
}

// CheckSQLiteFile opens the SQLite file at path read-only, as immutable,
// through the database/sql driver registered as driverName, and checks that it is a plantstore database (see
// [PrepareSQLiteFile]) and passes PRAGMA integrity_check. It writes
// nothing, and creates no -wal or -shm file.
//
// Errors: one wrapping [ErrNotPlantstore] that says what the file holds;
// [ErrCorrupt] with the check's first findings; any failure to read it,
// wrapped.
func CheckSQLiteFile(ctx context.Context, driverName, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	header := make([]byte, len(sqliteMagic))
	_, err = io.ReadFull(f, header)
	f.Close()
	if err != nil || string(header) != sqliteMagic {
		return notSQLiteError(path)
	}
	u := url.URL{Path: path}
	db, err := sql.Open(driverName, "file:"+u.EscapedPath()+"?immutable=1")
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", path, err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", path, err)
	}
	defer conn.Close()
	why, err := whyNotPlantstore(ctx, conn)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", path, err)
	}
	if why != "" {
		return notPlantstoreError(path, why)
	}
	rows, err := conn.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: integrity check: %w", path, err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("sqlstore: %s: integrity check: %w", path, err)
		}
		if line != "ok" && len(found) < 5 {
			found = append(found, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: %s: integrity check: %w", path, err)
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, strings.Join(found, "; "))
	}
	return nil
}

// placeNew gives the file tmp the name dst as well, unless dst exists:
// then it returns an error wrapping fs.ErrExist. Where the file system
// has no hard links, it creates dst empty and exclusively, and renames tmp
// over it.
func placeNew(tmp, dst string) error {
	err := os.Link(tmp, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EMLINK) {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Rename(tmp, dst)
}

// syncFile flushes the file or directory at path to stable storage.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
