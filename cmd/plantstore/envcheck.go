package main

import (
	"flag"
	"os"
	"slices"
	"strings"
)

// environ returns the process's environment, for unknownVariables.
var environ = os.Environ

// projectVariables are the PLANTSTORE_ variables that set no flag: the
// binary's secrets, and those of the project's scripts and tests, which
// the binary ignores without a word.
var projectVariables = map[string]string{
	"PLANTSTORE_TOKENS":               "accepted tokens (cmd/plantstore, cmd/plantload, examples)",
	"PLANTSTORE_WEBHOOK_SECRET":       "the webhook signing secret",
	"PLANTSTORE_TEST_POSTGRES_DSN":    "the PostgreSQL server of the tests",
	"PLANTSTORE_TEST_LONG":            "tests: 1 runs the long scenarios too (CI)",
	"PLANTSTORE_BIN":                  "scripts/loopback-bench.sh: the server binary to measure",
	"PLANTSTORE_ARGS":                 "scripts/loopback-bench.sh: its arguments",
	"PLANTSTORE_REQUIRE_OPENAPI_LINT": "tests: fail TestOpenAPILint instead of skipping it (CI)",
	"PLANTSTORE_ROBUSTNESS_DURATION":  "tests: how long each linearizability run lasts",
	"PLANTSTORE_ROBUSTNESS_OUT":       "tests: where a failed linearizability check writes its visualization",
	"PLANTSTORE_KEEP_FLEET":           "deploy's fleet test: keep the fleet's files",
	"PLANTSTORE_KEEP_PATRONI":         "deploy's Patroni test: keep its directory and logs",
	"PLANTSTORE_DB_PASSWORD":          "deploy/patroni's templates: the plantstore role's password",
	"PLANTSTORE_TEST_PG_BINDIR":       "tests: where internal/pgtest finds PostgreSQL's programs",
	"PLANTSTORE_ARTIFACTS":            "tests: where apidocs' browser test leaves its screenshot of /docs",
}

// unknownVariables returns a warning for each variable in env that begins
// with envPrefix and that plantstore does not read, such as the prefix and
// TOKEN where TOKENS was meant, naming the variable it is closest to, so
// that a misspelt setting is not silently ignored. Those that go on with
// TEST_ are the test suite's and are left alone.
func unknownVariables(env []string, fs *flag.FlagSet) []string {
	var known []string
	for name := range projectVariables {
		known = append(known, name)
	}
	slices.Sort(known)
	fs.VisitAll(func(f *flag.Flag) {
		if !noEnv[f.Name] {
			known = append(known, envName(f.Name))
		}
	})
	var warnings []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || strings.HasPrefix(name, envPrefix+"TEST_") || slices.Contains(known, name) {
			continue
		}
		w := name + " is not a variable plantstore reads"
		if near := nearest(name, known); near != "" {
			w += "; did you mean " + near + "?"
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// nearest returns the name of names closest to s, if what follows their
// prefix is at most a third of its length of edits away, or "".
func nearest(s string, names []string) string {
	s = strings.TrimPrefix(s, envPrefix)
	best, bestD := "", len(s)/3+1
	for _, n := range names {
		if d := editDistance(s, strings.TrimPrefix(n, envPrefix)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
