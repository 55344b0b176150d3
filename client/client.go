// Package client calls a plantstore server over HTTP the way a Go program
// calls a [plantstore.PlantStore] in process: the same types in, the same
// types and errors out.
//
//	c, err := client.New("https://plants.example.com/api", client.WithToken(token))
//	p, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera"})
//	if errors.Is(err, plantstore.ErrConflict) { … }
//
// Errors map back to the library's: [plantstore.ErrConflict],
// [plantstore.ErrNotFound], [plantstore.ErrUnavailable] and
// [plantstore.ErrOutcomeUnknown] are checked with [errors.Is], a
// [*plantstore.ValidationError] with [errors.As]. Credentials the server
// refuses are [ErrUnauthorized] (error 401) or [ErrForbidden] (error 403).
// An error answered by the server is an [*Error] that carries its code and
// message and unwraps to the error it stands for, if any. The client reads
// the code from the Error body, so it works against a server that answers
// failures with the contract's 400 as well as one with conventional
// statuses. An answer the contract does not allow for the call (an empty
// 201, a 200 to a delete, a redirect) is a [*ProtocolError], never a
// success.
//
// The token, and the plants a create sends, go to the base URL's origin
// (scheme, host and port) and to no other: the client follows no
// redirect, whatever the [http.Client] given to [WithHTTPClient] would
// do (see [New]), and [Client.All] follows no next link to another
// origin.
//
// A call is repeated, with exponential backoff and full jitter, only when
// repeating it cannot store or delete a plant twice: when nothing reached
// the server, when the server answered error 503 (nothing was kept), and,
// for reads, after any failure of the connection or the gateway. See
// [RetryPolicy].
package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"

	"github.com/plantstore/plantstore/internal/wire"
)

// A Client calls one plantstore server. It is safe for concurrent use.
type Client struct {
	base      *url.URL // the server's base URL, as given to New
	plantsURL string   // base/plants
	readyzURL string   // base/readyz
	token     string
	hc        *http.Client
	retry     RetryPolicy
	// jitter returns a uniformly random value in [0, n); tests replace it
	// to make waits predictable.
	jitter func(n int64) int64
}

// An Option configures a [Client].
type Option func(*Client)

// WithToken makes the client send token as its bearer credentials
// (Authorization: Bearer token) with every request. It must be an RFC 6750
// b64token, as the server requires. An empty token sends no credentials.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithHTTPClient makes the client send its requests with hc instead of
// [http.DefaultClient]: for timeouts, TLS settings, proxies or a transport
// of your own. A call's deadline is better given by its context, which
// also ends the waits between attempts.
//
// New copies *hc and replaces the copy's CheckRedirect, so that hc's own
// redirect policy is never consulted: the client follows no redirect (see
// [New]). Changes made to hc after New are not seen; its Transport and Jar
// are shared.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithRetry makes the client repeat failed calls as p says. Without it a
// client makes up to 3 attempts, waiting up to 100 ms before the second and
// up to 200 ms before the third, and never repeats a create or delete whose
// outcome is unknown. WithRetry(RetryPolicy{}) turns retries off.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) { c.retry = p }
}

// New returns a client for the plantstore server at baseURL: an absolute
// http or https URL, which may carry a path prefix when the server's
// handler is mounted under one ("https://example.com/api" serves
// /api/plants). It must not carry credentials, a query or a fragment.
//
// The client sends its token, and the plants it creates, to baseURL's
// origin (scheme, host and port) and nowhere else. It follows no
// redirect, not even within that origin: the API has none, so a redirect
// means that baseURL is not the server's (an http URL for an https
// server, a server that moved), and following one could only hide that.
// net/http, left to follow it, would send the Authorization header to
// another port, scheme or subdomain of the host, and a 307's body to any
// host. A redirect is answered with a [*ProtocolError] that says where it
// led; the caller decides whether that is the server's new URL.
//
// Errors: New reports an invalid baseURL, token or retry policy; it does
// not contact the server (see [Client.Ping]).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: invalid base URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("client: invalid base URL %q: the scheme must be http or https", baseURL)
	case u.Host == "":
		return nil, fmt.Errorf("client: invalid base URL %q: no host", baseURL)
	case u.User != nil:
		return nil, errors.New("client: invalid base URL: it must not carry credentials; use WithToken")
	case u.RawQuery != "" || u.ForceQuery:
		return nil, fmt.Errorf("client: invalid base URL %q: it must not have a query", baseURL)
	case u.Fragment != "" || strings.Contains(baseURL, "#"):
		return nil, fmt.Errorf("client: invalid base URL %q: it must not have a fragment", baseURL)
	}
	c := &Client{
		base:   u,
		hc:     http.DefaultClient,
		retry:  defaultRetry,
		jitter: rand.Int64N,
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		return nil, errors.New("client: WithHTTPClient(nil)")
	}
	hc := *c.hc
	hc.CheckRedirect = refuseRedirect
	c.hc = &hc
	if c.token != "" && !wire.IsB64Token(c.token) {
		return nil, errors.New("client: invalid token: it must be an RFC 6750 b64token (letters, digits, -._~+/, then any =)")
	}
	if err := c.retry.check(); err != nil {
		return nil, err
	}
	c.plantsURL = u.JoinPath("plants").String()
	c.readyzURL = u.JoinPath("readyz").String()
	return c, nil
}
