package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

// envPrefix begins the name of the environment variable of every flag.
const envPrefix = "PLANTSTORE_"

// envName returns the environment variable that sets a flag when the
// command line does not: -max-body is PLANTSTORE_MAX_BODY.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// A flagError is a flag, or the variable that stood for it, whose value
// the binary cannot use. Its message names what the user gave, so that
// they know what to fix.
type flagError struct {
	Flag string // the flag's name, without its dash
	Name string // how the user gave it: "-" + Flag, or the variable that set it
	// Unparsed is the variable's value when the flag could not parse it,
	// and "" when the flag took its value.
	Unparsed string
	Err      error // why: a valueRule, or the cause
}

func (e *flagError) Error() string {
	switch {
	case e.Unparsed != "":
		return fmt.Sprintf("invalid value %q in %s (the variable of -%s): %v", e.Unparsed, e.Name, e.Flag, e.Err)
	case errors.As(e.Err, new(valueRule)):
		return e.Name + " " + e.Err.Error()
	}
	return e.Name + ": " + e.Err.Error()
}

func (e *flagError) Unwrap() error { return e.Err }

// A valueRule is a rule a flag's value breaks, which reads after the flag's
// name: "-max-body must be positive".
type valueRule string

func (r valueRule) Error() string { return string(r) }

// The rules that parseFlags checks.
const (
	errNotPositive valueRule = "must be positive"
	errNegative    valueRule = "must not be negative"
	errLogFormat   valueRule = "must be text or json"
)

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
// environment variable, when that is set and not empty, so that every flag
// defined on fs, now or later, can come from the environment, and a flag
// on the command line beats its variable. A *listFlag takes one value per
// comma-separated item. It returns the flags it set, each with the
// variable it set it from, so that later checks can name the variable.
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

// printUsage writes what -h shows: what the binary does, its flags with
// their variables, the other variables, and examples.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: plantstore [flags]
       plantstore backup -db PATH -out FILE     (see plantstore backup -h)
       plantstore restore -from FILE -db PATH   (see plantstore restore -h)

plantstore serves the Plant Store API over HTTP, or HTTPS with -tls-cert:
POST /plants behind bearer authentication, GET and DELETE of plants,
/healthz, /readyz, the API's reference at /docs, and signed plant-added
webhooks. It stops cleanly on SIGINT or SIGTERM; SIGHUP re-reads the
certificate, the token file and the webhook secret file. backup copies a
SQLite database while servers use it; restore brings a copy back.

Flags (each also read from the environment variable shown, when the command
line does not give it; a repeatable flag's variable is a comma-separated list):
`)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if arg != "" {
			line += " " + arg
		}
		if !noEnv[f.Name] {
			line += "  (" + envName(f.Name) + ")"
		}
		fmt.Fprintln(w, line)
		if f.DefValue != "" && f.DefValue != "false" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "      %s\n", usage)
	})
	fmt.Fprint(w, `
Environment, besides the flags' variables:
  PLANTSTORE_TOKENS          accepted bearer tokens, comma-separated (with -token-file's)
  PLANTSTORE_WEBHOOK_SECRET  the webhook signing secret (-webhook-secret-file wins)
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                             turn tracing on, as -otlp-endpoint does (which wins)
  OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, ...
                             the OpenTelemetry SDK's own (docs/operations.md#tracing)

Examples:
  PLANTSTORE_TOKENS=s3cret plantstore -db memory
  PLANTSTORE_DB=postgres://plantstore@db.internal/plants PLANTSTORE_LOG_FORMAT=json \
    plantstore -addr :8080 -token-file /etc/plantstore/tokens
`)
}

// buildVersion and buildCommit, when set at link time (go build -ldflags
// "-X main.buildVersion=v1.2.0 -X main.buildCommit=$(git rev-parse HEAD)"),
// name the build where the go command stamps nothing: a build with
// -buildvcs=false, or from a source archive without .git.
var buildVersion, buildCommit string

// version describes the build, from the module and version control
// information the go command stamps into the binary, or the linker's
// buildVersion and buildCommit.
func version() string {
	return buildinfo.Read(buildVersion, buildCommit).String()
}
