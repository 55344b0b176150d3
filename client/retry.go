package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A RetryPolicy says how often a [Client] repeats a failed call and how
// long it waits in between.
//
// A call is repeated only when that is safe: when the request never
// reached the server (the connection was refused, the name did not
// resolve), when the server answered error 503 (nothing of the request was
// kept), and, for reads, after any failure of the connection and after a
// gateway's 502 or 504. A create or delete whose outcome is unknown (the
// connection failed after the request was sent, error 504, a gateway's
// 502) is repeated only with RetryUnknownOutcome.
type RetryPolicy struct {
	// MaxAttempts is the most attempts one call makes, the first
	// included. Zero and one mean no retries.
	MaxAttempts int

	// BaseDelay bounds the wait before the first retry; the bound doubles
	// with each further retry, up to MaxDelay. Each wait is drawn
	// uniformly between zero and the bound ("full jitter"), so that
	// clients that failed together do not retry together.
	//
	// An error 503 that carries Retry-After (in seconds, up to an hour)
	// is waited for instead: at least that long, and up to half as long
	// again, drawn at random, so that the clients the server sent it to
	// do not all come back in the same second. When the call's context
	// would end before the wait does, the call returns the 503 at once.
	BaseDelay time.Duration

	// MaxDelay caps the bound on each wait the client draws by itself,
	// not a server's Retry-After. Zero means no cap.
	MaxDelay time.Duration

	// RetryUnknownOutcome lets the client repeat a create or delete whose
	// outcome is unknown. A repeated create may then find its own plant
	// stored by an earlier attempt and be answered error 409: the client
	// reads the plant and, when it is exactly the plant being created,
	// returns it as created. A repeated delete answered error 404 returns
	// nil: the plant is gone. Either may then report a plant that another
	// client created, or deleted, in the meantime.
	RetryUnknownOutcome bool
}

// defaultRetry is the policy of a client made without WithRetry.
var defaultRetry = RetryPolicy{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}

func (p RetryPolicy) check() error {
	switch {
	case p.MaxAttempts < 0:
		return errors.New("client: invalid retry policy: MaxAttempts is negative")
	case p.BaseDelay < 0 || p.MaxDelay < 0:
		return errors.New("client: invalid retry policy: a delay is negative")
	case p.MaxDelay != 0 && p.MaxDelay < p.BaseDelay:
		return errors.New("client: invalid retry policy: MaxDelay is less than BaseDelay")
	}
	return nil
}

// bound returns the longest wait before attempt n+1, after n attempts.
func (p RetryPolicy) bound(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d > 0; i++ {
		if d > (1<<63-1)/2 {
			d = 1<<63 - 1
			break
		}
		d *= 2
	}
	if p.MaxDelay != 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// A failure says what a failed attempt means for repeating it.
type failure int

const (
	// final: do not repeat. Success, or an answer that another attempt
	// would not change.
	final failure = iota
	// notKept: nothing of the request was kept (or nothing was sent):
	// repeating it is safe.
	notKept
	// readFailed: a read failed in transit; repeating a read is safe.
	readFailed
	// unknownOutcome: a create or delete may or may not have taken effect.
	unknownOutcome
)

// do makes c's attempts at cl until one succeeds, fails for good, or the
// policy or ctx ends them. It returns the successful response.
func (c *Client) do(ctx context.Context, cl *call) (*response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var unknown error // the first attempt whose outcome is unknown
	for n := 1; ; n++ {
		resp, f, err := c.attempt(ctx, cl)
		if err == nil {
			return resp, nil
		}
		if f == unknownOutcome && unknown == nil {
			unknown = err
		}
		retry := f == notKept || f == readFailed || (f == unknownOutcome && c.retry.RetryUnknownOutcome)
		if !retry || cl.once || n >= c.retry.MaxAttempts || ctx.Err() != nil {
			if unknown != nil && unknown != err {
				return nil, &outcomeError{unknown: unknown, last: err, attempts: n}
			}
			return nil, err
		}
		d := c.wait(n, err)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d && retryAfter(err) > 0 {
			// The server asked for a wait the caller cannot afford.
			return nil, err
		}
		if werr := sleep(ctx, d); werr != nil {
			if unknown != nil {
				return nil, &outcomeError{unknown: unknown, last: werr, attempts: n}
			}
			return nil, fmt.Errorf("%w (waiting to retry after: %w)", werr, err)
		}
	}
}

// wait returns how long to wait after n attempts, the last of which
// failed with err: a random duration up to the policy's bound or, when an
// error 503 carried Retry-After, that long and up to half as long again.
func (c *Client) wait(n int, err error) time.Duration {
	if ra := retryAfter(err); ra > 0 {
		return ra + time.Duration(c.jitter(int64(ra/2)+1))
	}
	b := int64(c.retry.bound(n))
	if b < 1<<63-1 {
		b++ // the bound itself may be drawn
	}
	return time.Duration(c.jitter(b))
}

// maxRetryAfter bounds the Retry-After a client waits for, against a
// server that asks for days.
const maxRetryAfter = time.Hour

// retryAfter returns how long an error 503 asked the client to wait with
// its Retry-After header, in seconds, or zero.
func retryAfter(err error) time.Duration {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Code != http.StatusServiceUnavailable || e.header == nil {
		return 0
	}
	s, err := strconv.Atoi(e.header.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, maxRetryAfter)
}

// sleep waits for d or until ctx is done, and then returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
