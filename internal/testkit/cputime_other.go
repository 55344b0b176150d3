//go:build !unix

package testkit

import "time"

// ProcessCPU reports that the process's CPU time is not known here.
func ProcessCPU() (cpu time.Duration, ok bool) { return 0, false }
