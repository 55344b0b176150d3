package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// config is the parsed command line.
type config struct {
	target   string // the full URL requests are sent to
	token    string
	conns    int
	duration time.Duration
	total    int64
	startID  int64
	name     string
	tag      string
	hasTag   bool
	timeout  time.Duration

	webhookListen string        // where the webhook receiver listens, or ""
	webhookWait   time.Duration // how long to wait for the deliveries after the load
	webhookSecret []byte        // checks the deliveries' signatures when set
	webhookDown   time.Duration // how long the receiver refuses deliveries
}

// errUsage reports a command line that cannot be run.
var errUsage = errors.New("plantload: usage")

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://127.0.0.1:8080", "base URL of the server; requests go to `URL`/plants")
	fs.StringVar(&c.token, "token", "", "bearer `token` (default: the first of $PLANTSTORE_TOKENS, the server's variable)")
	fs.IntVar(&c.conns, "c", 32, "number of connections, one worker each")
	fs.DurationVar(&c.duration, "d", 10*time.Second, "run for this long (0: no time bound)")
	fs.Int64Var(&c.total, "n", 0, "send this many requests in total (0: no count bound)")
	fs.Int64Var(&c.startID, "start-id", 0, "id of the first plant (default: current time in nanoseconds)")
	fs.StringVar(&c.name, "name", "Monstera", "name of every plant")
	fs.StringVar(&c.tag, "tag", "", "tag of every plant (omitted unless set)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "give up on one request after this long")
	fs.StringVar(&c.webhookListen, "webhook-listen", "", "receive the server's webhooks on this loopback `address` (start the server with -webhook http://ADDRESS/), count them, and after the load wait for the rest")
	fs.DurationVar(&c.webhookDown, "webhook-down", 0, "with -webhook-listen, answer 503 to every delivery for this long from the start, as a subscriber that is down")
	fs.DurationVar(&c.webhookWait, "webhook-wait", 2*time.Minute, "with -webhook-listen, how long to wait after the load for the deliveries still due")
	if err := fs.Parse(args[1:]); err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	startIDSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "tag":
			c.hasTag = true
		case "start-id":
			startIDSet = true
		}
	})
	if !startIDSet {
		c.startID = time.Now().UnixNano()
	}
	if c.token == "" {
		// The variable the server reads its tokens from, so that one
		// export serves both.
		for t := range strings.SplitSeq(getenv("PLANTSTORE_TOKENS"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.token = t
				break
			}
		}
	}
	c.webhookSecret = []byte(getenv("PLANTSTORE_WEBHOOK_SECRET"))
	switch {
	case c.conns < 1:
		return c, fmt.Errorf("%w: -c must be at least 1", errUsage)
	case c.duration < 0 || c.total < 0:
		return c, fmt.Errorf("%w: -d and -n must not be negative", errUsage)
	case c.duration == 0 && c.total == 0:
		return c, fmt.Errorf("%w: set -d or -n so that the run ends", errUsage)
	case c.timeout <= 0:
		return c, fmt.Errorf("%w: -timeout must be positive", errUsage)
	case c.webhookWait <= 0:
		return c, fmt.Errorf("%w: -webhook-wait must be positive", errUsage)
	case c.webhookDown < 0:
		return c, fmt.Errorf("%w: -webhook-down must not be negative", errUsage)
	}
	u, err := url.Parse(*base)
	if err != nil {
		return c, fmt.Errorf("%w: bad -url: %w", errUsage, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return c, fmt.Errorf("%w: bad -url %q: want http://HOST[:PORT][/PATH]", errUsage, *base)
	}
	c.target = strings.TrimSuffix(u.String(), "/") + "/plants"
	return c, nil
}

// result is what one worker observed. Workers own theirs until they finish.
type result struct {
	latencies []time.Duration // of every request that got a response
	statuses  map[int]int64
	codes     map[string]int64 // Error codes of non-200 responses
	transport map[string]int64 // requests that got no response, by cause
}

func newResult() *result {
	return &result{
		statuses:  map[int]int64{},
		codes:     map[string]int64{},
		transport: map[string]int64{},
	}
}

func (r *result) merge(o *result) {
	r.latencies = append(r.latencies, o.latencies...)
	for k, v := range o.statuses {
		r.statuses[k] += v
	}
	for k, v := range o.codes {
		r.codes[k] += v
	}
	for k, v := range o.transport {
		r.transport[k] += v
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}

	tr := &http.Transport{
		Proxy:               nil, // only ever talk to -url itself
		DialContext:         (&net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        c.conns,
		MaxIdleConnsPerHost: c.conns,
		MaxConnsPerHost:     c.conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   c.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}

	// stopCtx bounds when workers start new requests; requests already
	// sent may finish, each within -timeout, so that the run's end does
	// not show up as errors.
	stopCtx := ctx
	if c.duration > 0 {
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}

	var rc *receiver
	if c.webhookListen != "" {
		rc = newReceiver(c.webhookSecret, c.startID, time.Now().Add(c.webhookDown))
		stop, err := listenWebhooks(c.webhookListen, rc)
		if err != nil {
			return err
		}
		defer stop()
	}

	var issued atomic.Int64
	results := make([]*result, c.conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range results {
		results[i] = newResult()
		wg.Go(func() {
			work(ctx, stopCtx, client, &c, &issued, results[i], rc)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	total := newResult()
	for _, r := range results {
		total.merge(r)
	}
	report(stdout, &c, total, elapsed)
	var undelivered error
	if rc != nil {
		f := rc.awaitDrain(ctx, c.webhookWait)
		reportWebhooks(stdout, total, elapsed, f)
		if f.left > 0 {
			undelivered = fmt.Errorf("%w: %d after waiting %s", errUndelivered, f.left, c.webhookWait)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plantload: interrupted: %w", err)
	}
	if len(total.latencies) == 0 {
		return errors.New("plantload: no request got a response")
	}
	return undelivered
}

// work sends requests until stopCtx ends or the -n budget is spent.
// With rc, it records the plants created with 200.
func work(ctx, stopCtx context.Context, client *http.Client, c *config, issued *atomic.Int64, r *result, rc *receiver) {
	// The body is built in place: a fixed prefix, the id, a fixed suffix.
	prefix := []byte(`{"id":`)
	suffix := []byte(`,"name":` + jsonString(c.name))
	if c.hasTag {
		suffix = append(suffix, `,"tag":`+jsonString(c.tag)...)
	}
	suffix = append(suffix, '}')
	buf := make([]byte, 0, len(prefix)+20+len(suffix))
	var body bytes.Reader
	var errBody bytes.Buffer
	auth := ""
	if c.token != "" {
		auth = "Bearer " + c.token
	}

	for stopCtx.Err() == nil {
		k := issued.Add(1)
		if c.total > 0 && k > c.total {
			return
		}
		buf = append(buf[:0], prefix...)
		buf = strconv.AppendInt(buf, c.startID+k-1, 10)
		buf = append(buf, suffix...)
		body.Reset(buf)

		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target, &body)
		if err != nil {
			r.transport[err.Error()]++
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}

		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return // interrupted: not the server's failure
			}
			r.transport[transportCause(err)]++
			continue
		}
		if resp.StatusCode == http.StatusOK {
			_, err = io.Copy(io.Discard, resp.Body)
		} else {
			errBody.Reset()
			_, err = errBody.ReadFrom(resp.Body)
		}
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.transport["reading body: "+transportCause(err)]++
			continue
		}
		r.latencies = append(r.latencies, d)
		r.statuses[resp.StatusCode]++
		if rc != nil && resp.StatusCode == http.StatusOK {
			rc.create(c.startID + k - 1)
		}
		if resp.StatusCode != http.StatusOK {
			r.codes[errorCode(errBody.Bytes())]++
		}
	}
}

// errorCode returns the error field of an Error body, or a description of
// why the body is not one.
func errorCode(b []byte) string {
	var e struct {
		Error   *int32  `json:"error"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		return "not-an-Error-body"
	}
	return strconv.FormatInt(int64(*e.Error), 10)
}

// transportCause drops the method and URL that every *url.Error repeats.
func transportCause(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return err.Error()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
