//go:build !unix

package webhook

import (
	"errors"
	"os"
)

// lockRunFile fails: this system has no flock for [WithRunLock].
func lockRunFile(path, owner string) (prev string, f *os.File, err error) {
	return "", nil, errors.ErrUnsupported
}
