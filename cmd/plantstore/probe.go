package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// errProbePort is probeAddr's error for an address whose port the server
// picks when it starts, which a probe cannot know.
var errProbePort = errors.New("-probe needs the port the server listens on: -addr (or PLANTSTORE_ADDR) names none, or port 0")

// probeAddr returns the host:port that a probe of a server listening on
// addr connects to: addr itself, with a wildcard or empty host replaced by
// the loopback address of its family.
func probeAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("-probe: %w", err)
	}
	if port == "" || port == "0" {
		return "", errProbePort
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}

// probe sends GET o.probe to the server that o's -addr describes, over
// HTTPS with -tls-cert, and returns nil when it answers 200. It is the health check of a container
// image that has no HTTP client of its own (a distroless or scratch
// image): there the check runs with the server's environment, so it finds
// the server's address in PLANTSTORE_ADDR as the server did. It waits at
// most -ready-timeout and two seconds more, for /readyz answers within
// -ready-timeout.
func probe(ctx context.Context, o *options, stdout io.Writer) error {
	addr, err := probeAddr(o.addr)
	if err != nil {
		return err
	}
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
	}
	url := scheme + "://" + addr + o.probe
	ctx, cancel := context.WithTimeout(ctx, o.readyTimeout+2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("-probe: %w", err)
	}
	// No proxy: the server is on this host. Its certificate names the
	// host clients use, not loopback, and the probe sends no token and
	// learns only a status: it does not verify the certificate.
	client := &http.Client{Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("-probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	body = bytes.TrimSpace(body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("-probe: GET %s answered %d %s", url, resp.StatusCode, body)
	}
	fmt.Fprintf(stdout, "GET %s: %d %s\n", url, resp.StatusCode, body)
	return nil
}

// checkProbePath returns an error unless p is a path to probe.
func checkProbePath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("must be a path such as /readyz, not %q", p)
	}
	return nil
}
