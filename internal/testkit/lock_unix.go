//go:build unix

package testkit

import (
	"os"
	"syscall"
)

// LockFile takes an exclusive lock on the file at path, made if missing,
// and returns its release.
func LockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
