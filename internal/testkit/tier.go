package testkit

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// LongEnv names the environment variable that turns on the long
// scenarios: set to 1, go test runs them too, as CI does.
const LongEnv = "PLANTSTORE_TEST_LONG"

// Long skips the test unless LongEnv is 1. It marks a scenario that runs
// for tens of seconds by design, whatever the machine: a failover of a
// Patroni cluster, instances stopped or killed for seconds at a time under
// load, hundreds of megabytes pushed through one process. Everything else
// stays in the suite that go test runs by default; CI runs both.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + "; skipped in -short mode")
	}
	if !LongOn() {
		t.Skip(what + "; runs with " + LongEnv + "=1, as CI does")
	}
}

// LongOn tells whether the long scenarios run: LongEnv is 1, outside
// -short mode.
func LongOn() bool {
	return !testing.Short() && os.Getenv(LongEnv) == "1"
}

// Main runs m, as a package's TestMain does, with -test.parallel raised to
// n unless the command line sets it. The packages that call it spend their
// tests waiting on the processes they start, on a database or on a clock,
// not on the CPU: GOMAXPROCS tests at a time (the default) would leave a
// small machine mostly idle.
func Main(m *testing.M, n int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
