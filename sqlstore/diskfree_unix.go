//go:build unix

package sqlstore

import "syscall"

// freeBytes returns the bytes free for an unprivileged process on the
// filesystem of dir.
func freeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
