package testkit

import (
	"testing"
	"time"
)

// WaitUntil polls cond, every few milliseconds, until it holds, and fails
// the test if it does not within limit, naming what it waited for. Deferred
// calls and Cleanups run as the test ends, so a load the test started stops
// there too.
func WaitUntil(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting, after %v, for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
