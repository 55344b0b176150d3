// Package secretfile reads the small files that hold secrets: token
// files, webhook signing secrets, TLS keys. Every library package that
// reads one reads it here, so that each is bounded and checked alike.
package secretfile

import (
	"errors"
	"io"
	"log/slog"
	"os"
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

// Read returns the contents of a file of secrets, read through to its end
// but no further than MaxSize bytes. Files that are not regular are read
// too, so that /dev/stdin and a shell's process substitution
// (<(vault read …)) work; the bound keeps a device that never ends from
// hanging its reader.
func Read(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
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
