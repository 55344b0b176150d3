package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/plantstore/plantstore/server"
)

// errProbePort is probe's error for an address whose port the server
// picks when it starts, which a probe cannot know.
var errProbePort = fmt.Errorf("-probe needs the port the server listens on: -addr (or PLANTSTORE_ADDR) names none, or port 0: %w", server.ErrProbePort)

// probe sends GET o.probe to the server at -addr (PLANTSTORE_ADDR in an
// image, as for the server), over HTTPS with -tls-cert, and returns nil
// when it answers 200 within -ready-timeout and two seconds more.
func probe(ctx context.Context, o *options, stdout io.Writer) error {
	url, err := server.ProbeURL(o.addr, o.probe, o.tlsCert != "")
	if errors.Is(err, server.ErrProbePort) {
		return errProbePort
	} else if err != nil {
		return fmt.Errorf("-probe: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.readyTimeout+2*time.Second)
	defer cancel()
	body, err := server.Probe(ctx, url)
	if err != nil {
		return fmt.Errorf("-probe: %w", err)
	}
	fmt.Fprintf(stdout, "GET %s: 200 %s\n", url, body)
	return nil
}

// checkProbePath returns an error unless p is a path to probe.
func checkProbePath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("must be a path such as /readyz, not %q", p)
	}
	return nil
}
