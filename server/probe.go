package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// ErrProbePort is ProbeURL's error for an address whose port the server
// picks when it starts, which a probe cannot know.
var ErrProbePort = errors.New("server: the address names no port the server listens on (none, or port 0)")

// ProbeURL returns the URL of path on the server that listens on addr
// (a [Listen] address), as a health check running on the same host asks
// for it: addr itself, with a wildcard or empty host replaced by the
// loopback address of its family, over HTTPS when tls is set.
//
// Errors: [ErrProbePort] for a port that is missing or 0; that of
// [net.SplitHostPort].
func ProbeURL(addr, path string, tls bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "" || port == "0" {
		return "", ErrProbePort
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path, nil
}

// Probe sends GET url to a server on this host and returns the first KiB
// of its answer's body, trimmed, and an error unless it answered 200: the
// health check of a container image that has no HTTP client of its own
// (a distroless or scratch image). It uses no proxy, sends no token and
// does not verify the certificate, which names the host clients use, not
// loopback: it learns only a status. ctx bounds it.
func Probe(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	body = bytes.TrimSpace(body)
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("server: GET %s answered %d %s", url, resp.StatusCode, body)
	}
	return body, nil
}
