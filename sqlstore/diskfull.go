package sqlstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// ErrDiskFull reports a SQLite database that [OpenSQLite] could not open
// because its filesystem is full: space must be freed before it can
// start. An error wrapping it is a [*DiskFullError]. cmd/plantstore exits
// with status 3 for it, so that a supervisor's log tells it from other
// failures.
var ErrDiskFull = errors.New("sqlstore: the database's filesystem is full")

// fullBelow is the free space, in bytes, under which a SQLite I/O error
// at open is taken for a full filesystem: SQLite needs room for its -shm
// file (32 KiB) and for the WAL's first frames before anything works.
const fullBelow = 1 << 20

// A DiskFullError is a SQLite database that could not be opened because
// its directory's filesystem is full, where SQLite itself says only "disk
// I/O error". It wraps [ErrDiskFull] and SQLite's error.
type DiskFullError struct {
	Dir  string
	Free uint64 // bytes free for this process
	Err  error  // SQLite's error
}

// Error says what to do, in the words the binary has always logged.
func (e *DiskFullError) Error() string {
	return fmt.Sprintf("database directory %s is full: %d bytes free; free some space, then start again (%v)", e.Dir, e.Free, e.Err)
}

func (e *DiskFullError) Unwrap() []error { return []error{ErrDiskFull, e.Err} }

// diskFull returns a *DiskFullError for err, the failure to open the
// SQLite file at path, when it is an I/O error or SQLITE_FULL and the
// file's filesystem has less than fullBelow bytes free, and nil
// otherwise.
func diskFull(path string, err error) error {
	code, _ := sqliteCode(err)
	if code != 10 && code != 13 && !errors.Is(err, syscall.ENOSPC) { // SQLITE_IOERR, SQLITE_FULL
		return nil
	}
	dir := filepath.Dir(path)
	free, ok := freeBytes(dir)
	if !ok || free >= fullBelow {
		return nil
	}
	return &DiskFullError{Dir: dir, Free: free, Err: err}
}
