//go:build !unix

package testkit

import "sync"

var lockMu sync.Mutex

// LockFile serializes the builds of this process only: without flock, test
// processes building the same package at once may race.
func LockFile(string) (unlock func(), err error) {
	lockMu.Lock()
	return lockMu.Unlock, nil
}
