// Package secretfile reads the small files that hold secrets: token
// files, webhook signing secrets, TLS keys. Every library package that
// reads one reads it here, so that each is bounded and checked alike.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// MaxSize bounds what a file of secrets may hold, so that a path such as
// /dev/zero or a runaway file stops its reader at once instead of filling
// its memory. A million tokens of a few dozen bytes would not fit; a real
// token file is far smaller.
const MaxSize = 1 << 20

// ErrTooLarge is what Read wraps for a file past MaxSize.
var ErrTooLarge = errors.New("larger than 1 MiB")

// An Error is a file of secrets that cannot be used.
type Error struct {
	Path string
	Err  error // why: ErrTooLarge
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ReadWait bounds how long Read waits for a file that is not regular (a
// pipe) to reach its end, so that a writer that never finishes cannot
// hang its reader: a reload, and with it the process's shutdown.
const ReadWait = 5 * time.Second

// ErrNoEnd is what Read wraps for a pipe whose writer did not close it
// within ReadWait.
var ErrNoEnd = errors.New("no end of file in time: a pipe's writer must write the secrets and close it")

// Read returns the contents of a file of secrets, read through to its end
// but no further than MaxSize bytes. Files that are not regular are read
// too, so that /dev/stdin and a shell's process substitution
// (<(vault read …)) work; the bound keeps a device that never ends from
// hanging its reader.
//
// Read never waits for a pipe's writer to come: it opens the file without
// blocking (O_NONBLOCK), so that a named pipe (mkfifo) that no process is
// writing to reads as empty at once, where a plain open would wait until
// one does, and it waits at most ReadWait for a writer that came to close
// the pipe, returning an error wrapping ErrNoEnd after that.
func Read(name string) ([]byte, error) { return read(name, ReadWait) }

// read is Read, waiting at most wait for a pipe to end.
func read(name string, wait time.Duration) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Only what the runtime polls (pipes, sockets, terminals) takes a
	// deadline; a regular file or /dev/zero ends or hits MaxSize anyway.
	_ = f.SetReadDeadline(time.Now().Add(wait))
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, &Error{Path: name, Err: fmt.Errorf("%w (waited %v)", ErrNoEnd, wait)}
	}
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, &Error{Path: name, Err: ErrTooLarge}
	}
	return data, nil
}

// WarnIfShared logs a warning to logger when the file of secrets named
// what, a regular file, may be read by its group or by others, naming the
// chmod that fixes it. A pipe or device (/dev/stdin) is left alone: its
// mode says nothing of who reads what it carries. It returns the error of
// a file that cannot be looked at.
func WarnIfShared(logger *slog.Logger, what, file string) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	if info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
		logger.Warn(what+" is readable by group or others; chmod 600 it", "file", file,
			"mode", info.Mode().Perm().String(), "fix", "chmod 600 "+file)
	}
	return nil
}
