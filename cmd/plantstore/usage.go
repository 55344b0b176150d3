package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

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

// buildVersion and buildCommit, set at link time (-ldflags "-X
// main.buildVersion=v1.2.0 -X main.buildCommit=…"), name a build the go
// command stamped nothing into (-buildvcs=false, a source archive).
var buildVersion, buildCommit string

// version describes the build, as the go command or the linker named it.
func version() string {
	return buildinfo.Read(buildVersion, buildCommit).String()
}
