//go:build !linux

package sqlstore

import "os"

// newDatasync is nil where the committer's flush beside SQLite has not
// been measured and checked: there SQLite flushes each commit itself
// (synchronous=FULL on every connection).
var newDatasync func(f *os.File) (sync, plain func() error, release func())
