package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// errDiskFull marks a start that failed because the database's filesystem
// is full: main exits with status 3 for it, so that a supervisor's log
// tells it from other failures, and an operator knows what to do.
var errDiskFull = errors.New("free some space, then start again")

// fullBelow is the free space, in bytes, under which a SQLite I/O error
// at start is taken for a full filesystem: SQLite needs room for its -shm
// file (32 KiB) and for the WAL's first frames before anything works.
const fullBelow = 1 << 20

// A diskFullError is a SQLite database that could not be opened because
// its directory's filesystem is full.
type diskFullError struct {
	Dir  string
	Free uint64 // bytes free for this process
	Err  error  // SQLite's error
}

func (e *diskFullError) Error() string {
	return fmt.Sprintf("database directory %s is full: %d bytes free; %v (%v)", e.Dir, e.Free, errDiskFull, e.Err)
}

func (e *diskFullError) Unwrap() []error { return []error{errDiskFull, e.Err} }

// diskFull returns a *diskFullError for err, the failure to open the
// SQLite file at path, when it is an I/O error or SQLITE_FULL and the
// file's filesystem has less than fullBelow bytes free, and nil
// otherwise.
func diskFull(path string, err error) error {
	var lite interface{ Code() int }
	code := 0
	if errors.As(err, &lite) {
		code = lite.Code() & 0xff
	}
	if code != 10 && code != 13 && !errors.Is(err, syscall.ENOSPC) { // SQLITE_IOERR, SQLITE_FULL
		return nil
	}
	dir := filepath.Dir(path)
	free, ok := freeBytes(dir)
	if !ok || free >= fullBelow {
		return nil
	}
	return &diskFullError{Dir: dir, Free: free, Err: err}
}
