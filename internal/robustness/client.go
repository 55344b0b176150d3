package robustness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// A Client sends operations to plantstore servers over its own keep-alive
// connections.
type Client struct {
	http  *http.Client
	token string
}

// NewClient returns a Client that authenticates with token.
func NewClient(token string) *Client {
	return &Client{
		http: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 4,
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		}},
		token: token,
	}
}

// CloseIdleConnections closes the Client's idle connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// ErrNotSent reports that a request was never sent: the connection to the
// server could not be opened. Such an operation had no effect and is not
// part of the history.
var ErrNotSent = errors.New("robustness: request not sent")

// Do sends in to the server at base (http://host:port), giving up after
// timeout, and classifies the answer. It returns [ErrNotSent] when no
// request left, and an error when the server answered something the API
// does not allow; every other failure is an Output of [Unknown] outcome.
func (c *Client) Do(ctx context.Context, base string, in Input, timeout time.Duration) (Output, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := c.request(ctx, base, in)
	if err != nil {
		return Output{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
			return Output{}, fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		return Output{Result: Unknown, Detail: transportDetail(err)}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return Output{Result: Unknown, Detail: transportDetail(err)}, nil
	}
	return classify(in, resp.StatusCode, body)
}

func (c *Client) request(ctx context.Context, base string, in Input) (*http.Request, error) {
	var (
		req *http.Request
		err error
	)
	switch in.Kind {
	case Create:
		np := map[string]any{"id": in.ID, "name": in.Name}
		if in.HasTag {
			np["tag"] = in.Tag
		}
		b, _ := json.Marshal(np)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/plants", bytes.NewReader(b))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	case Delete:
		req, err = http.NewRequestWithContext(ctx, http.MethodDelete, base+"/plants/"+strconv.FormatInt(in.ID, 10), nil)
	case Read:
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/plants/"+strconv.FormatInt(in.ID, 10), nil)
	default:
		return nil, fmt.Errorf("robustness: unknown operation %v", in.Kind)
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

// transportDetail names a transport failure briefly.
func transportDetail(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed"
	}
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Err != nil {
		return opErr.Op + ": " + opErr.Err.Error()
	}
	return "transport error"
}

// classify reads an answer of the API into an Output.
func classify(in Input, status int, body []byte) (Output, error) {
	switch {
	case in.Kind == Create && status == http.StatusOK:
		var p struct {
			Name *string `json:"name"`
			Tag  *string `json:"tag"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Name == nil || *p.Name != in.Name ||
			(p.Tag != nil) != in.HasTag || (p.Tag != nil && *p.Tag != in.Tag) {
			return Output{}, fmt.Errorf("robustness: %v answered 200 %s", in, body)
		}
		return Output{Result: OK}, nil
	case in.Kind == Delete && status == http.StatusNoContent:
		return Output{Result: OK}, nil
	case in.Kind == Read && status == http.StatusOK:
		var p struct {
			ID   *int64  `json:"id"`
			Name *string `json:"name"`
			Tag  *string `json:"tag"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.ID == nil || *p.ID != in.ID || p.Name == nil {
			return Output{}, fmt.Errorf("robustness: %v answered 200 %s", in, body)
		}
		out := Output{Result: OK, Plant: Plant{Present: true, Name: *p.Name}}
		if p.Tag != nil {
			out.Plant.Tag, out.Plant.HasTag = *p.Tag, true
		}
		return out, nil
	}
	var e struct {
		Error int `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest {
		return Output{}, fmt.Errorf("robustness: %v answered %d %q", in, status, body)
	}
	detail := "error " + strconv.Itoa(e.Error)
	switch {
	case e.Error == http.StatusConflict && in.Kind == Create:
		return Output{Result: Conflict}, nil
	case e.Error == http.StatusNotFound && in.Kind != Create:
		return Output{Result: NotFound}, nil
	case e.Error == http.StatusServiceUnavailable:
		return Output{Result: Unavailable, Detail: detail}, nil
	case e.Error == http.StatusGatewayTimeout, e.Error == http.StatusInternalServerError:
		return Output{Result: Unknown, Detail: detail}, nil
	}
	return Output{}, fmt.Errorf("robustness: %v answered %d %s", in, status, body)
}
