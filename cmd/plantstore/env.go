package main

import (
	"flag"
	"strings"
)

// envPrefix begins the name of the environment variable of every flag.
const envPrefix = "PLANTSTORE_"

// envName returns the environment variable that sets a flag when the
// command line does not: -max-body is PLANTSTORE_MAX_BODY.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// noEnv names the flags that no variable sets: they ask the binary for
// something other than serving.
var noEnv = map[string]bool{"version": true, "probe": true}

// A listFlag holds the values of a repeatable flag. Its environment
// variable holds them as a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// applyEnv sets each flag of fs that the command line did not set from its
// variable, when not empty (a *listFlag one value per comma-separated
// item), and returns the flags it set, each with its variable.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) (map[string]string, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	fromEnv := map[string]string{}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || onCommandLine[f.Name] || noEnv[f.Name] {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		values := []string{v}
		if _, ok := f.Value.(*listFlag); ok {
			values = splitList(v)
		}
		for _, v := range values {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = &flagError{Flag: f.Name, Name: name, Unparsed: v, Err: serr}
				return
			}
		}
		fromEnv[f.Name] = name
	})
	return fromEnv, err
}

// splitList returns the comma-separated items of s, trimmed, without the
// empty ones.
func splitList(s string) []string {
	var items []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
