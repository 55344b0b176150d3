package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// BackupSQLiteFile writes a consistent copy of the plantstore SQLite
// database at path to the new file dst, while servers go on using path,
// as `plantstore backup` does: it refuses another application's file
// ([PrepareSQLiteFile]) before opening it, then copies it with
// [BackupSQLite] through the database/sql driver registered as
// driverName.
//
// Errors: an *[fs.PathError] when path does not exist; those of
// [PrepareSQLiteFile] and [BackupSQLite].
func BackupSQLiteFile(ctx context.Context, driverName, path, dst string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	// Refused before the DSN opens it, which would switch it to WAL.
	if err := PrepareSQLiteFile(ctx, driverName, path); err != nil {
		return err
	}
	db, err := sql.Open(driverName, SQLiteDSN(path))
	if err != nil {
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	defer db.Close()
	return BackupSQLite(ctx, driverName, db, dst)
}

// ErrDatabaseExists is RestoreSQLiteFile's error, wrapping [fs.ErrExist],
// when the database to restore, or its -wal or -shm file, exists.
var ErrDatabaseExists = fmt.Errorf("stop the server and move the database, with its -wal and -shm files, away first: %w", fs.ErrExist)

// RestoreSQLiteFile makes the backup src the SQLite database at path, as
// `plantstore restore` does: it checks src with [CheckSQLiteFile] and
// copies it through a temporary file beside path, flushed to stable
// storage before it is linked into place, so that path is either whole
// or absent. It refuses to replace a database: path, path-wal and
// path-shm must not exist.
//
// Errors: one wrapping [ErrDatabaseExists] (and [fs.ErrExist]) that names
// the file in the way; those of [CheckSQLiteFile]; any failure to copy,
// wrapped.
func RestoreSQLiteFile(ctx context.Context, driverName, src, path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("sqlstore: %s exists: %w", p, ErrDatabaseExists)
		}
	}
	if err := CheckSQLiteFile(ctx, driverName, src); err != nil {
		return err
	}
	if err := copyNew(src, path); err != nil {
		return fmt.Errorf("sqlstore: restore: %w", err)
	}
	return nil
}

// copyNew copies src to the new file dst, of mode 0600, through a
// temporary file beside it flushed to stable storage before it is linked
// to dst: Link, not Rename, fails when dst appeared meanwhile.
func copyNew(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := io.Copy(tmp, in); err != nil {
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), dst); err != nil {
		return err
	}
	return syncFile(filepath.Dir(dst))
}
