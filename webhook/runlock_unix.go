//go:build unix

package webhook

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// lockRunFile locks the file at path, made if missing, for as long as
// the returned file stays open, and replaces what it holds with owner. It
// returns what the file held: the owner of the run that locked it last,
// which the lock, released when its process ends, shows to be gone. It
// fails with errRunLocked while another run holds the lock.
func lockRunFile(path, owner string) (prev string, f *os.File, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return "", nil, errRunLocked
		}
		return "", nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRunFile))
	if err != nil {
		return "", nil, err
	}
	if err := f.Truncate(0); err != nil {
		return "", nil, err
	}
	if _, err := f.WriteAt([]byte(owner), 0); err != nil {
		return "", nil, err
	}
	return string(b), f, nil
}
