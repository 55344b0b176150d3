//go:build unix

package sqlstore

import (
	"io/fs"
	"syscall"
)

// dirWritable returns an *fs.PathError when this process may not create
// files in dir.
func dirWritable(dir string) error {
	const wOK, xOK = 0x2, 0x1
	if err := syscall.Access(dir, wOK|xOK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
