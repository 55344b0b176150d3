//go:build !unix

package sqlstore

// freeBytes cannot tell the free space here.
func freeBytes(string) (uint64, bool) { return 0, false }
