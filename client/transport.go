package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"

	"github.com/plantstore/plantstore"
)

// A call is one request a Client method makes, however many attempts it
// takes.
type call struct {
	method string
	url    string
	body   []byte // the JSON body, or nil for none
	// write marks a create or delete, whose outcome may be unknown after
	// a failure.
	write bool
	// plant marks a request for one plant's path, where error 404 means
	// that no plant has that id.
	plant bool
	// once makes the call a single attempt.
	once bool
	// ok is the call's success status in the API contract; any other
	// below 400 is a ProtocolError.
	ok int
}

// A response is the successful answer to a call.
type response struct {
	status int
	header http.Header
	body   []byte
	// bodyErr is why the body could not be read in full. The status is
	// still the server's answer.
	bodyErr error
	url     *url.URL // the URL that answered
}

// refuseRedirect is the CheckRedirect of every client's http.Client: it
// hands the redirect itself back to attempt, never following it, so that
// neither the token nor the body goes where it leads.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// maxErrorBody bounds how much of an error response is read: an Error is
// short, and a proxy's page need not be read whole.
const maxErrorBody = 64 << 10

// attempt sends cl once and tells what its failure, if any, means.
func (c *Client) attempt(ctx context.Context, cl *call) (*response, failure, error) {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	// sent turns true once the request's headers are written: until then,
	// whatever failed (a dial, a TLS handshake, a proxy's CONNECT), not a
	// byte of the request reached the server.
	var sent atomic.Bool
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }})
	req, err := http.NewRequestWithContext(trace, cl.method, cl.url, body)
	if err != nil {
		return nil, final, fmt.Errorf("client: %w", err)
	}
	if cl.body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	req.Header["Accept"] = []string{"application/json"}
	if c.token != "" {
		req.Header["Authorization"] = []string{"Bearer " + c.token}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		f, err := c.transportFailure(ctx, cl, sent.Load(), err)
		return nil, f, err
	}
	defer res.Body.Close()
	if res.StatusCode != cl.ok && res.StatusCode < 400 {
		return nil, final, statusError(cl, res)
	}
	if res.StatusCode == cl.ok {
		b, err := io.ReadAll(res.Body)
		if err != nil && !cl.write {
			// A read can simply be asked again.
			return nil, readFailed, fmt.Errorf("client: %s %s: reading the response: %w", cl.method, cl.url, err)
		}
		return &response{status: res.StatusCode, header: res.Header, body: b, bodyErr: err, url: res.Request.URL}, final, nil
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := responseError(cl, res.StatusCode, res.Header, b)
	return nil, e.failure(cl), e
}

// transportFailure classifies an error of http.Client.Do, where no
// response arrived; sent tells whether the request's headers were written.
func (c *Client) transportFailure(ctx context.Context, cl *call, sent bool, err error) (failure, error) {
	if cerr := ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if !sent || !cl.write {
			return final, fmt.Errorf("client: %w", err)
		}
		return unknownOutcome, &transportError{sentinel: plantstore.ErrOutcomeUnknown, err: err}
	}
	switch {
	case !sent:
		return notKept, &transportError{sentinel: plantstore.ErrUnavailable, err: err}
	case !cl.write:
		return readFailed, fmt.Errorf("client: %w", err)
	}
	// The request may have reached the server, and been acted on, before
	// the connection failed.
	return unknownOutcome, &transportError{sentinel: plantstore.ErrOutcomeUnknown, err: err}
}
