//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used so far, in user and
// system mode, over all its threads, for benchmarks to report per op: on a
// busy machine it moves far less than the wall time, which counts the time
// other processes hold the CPU. ok is false where it cannot be read.
func ProcessCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
