package main

import (
	"flag"
	"os"
	"slices"
	"strings"
)

// environ returns the process's environment, for unknownVariables.
var environ = os.Environ

// secretVariables are the PLANTSTORE_ variables that set no flag: the
// binary's secrets, read from the environment only.
var secretVariables = []string{"PLANTSTORE_TOKENS", "PLANTSTORE_WEBHOOK_SECRET"}

// unknownVariables returns a warning for each variable in env that begins
// with envPrefix and that plantstore does not read, such as the prefix and
// TOKEN where TOKENS was meant, naming the variable it is closest to, so
// that a misspelt setting is not silently ignored. Those that go on with
// TEST_ belong to the tests and scripts and are left alone, by that rule
// rather than a list.
func unknownVariables(env []string, fs *flag.FlagSet) []string {
	known := slices.Clone(secretVariables)
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
