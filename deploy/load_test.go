package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// A hookReceiver is a webhook subscriber that verifies every delivery and
// records it by its webhook-id and by the plant id in its body.
type hookReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	byID   map[string]int // deliveries by webhook-id
	plants map[int64]int  // deliveries by plant id
	bad    []string
	// hold, while not nil, keeps each verified delivery waiting, unanswered
	// and not recorded, until it is closed or the sender goes away.
	hold   chan struct{}
	active int // deliveries being held
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{byID: map[string]int{}, plants: map[int64]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		h.srv.Close()
		for _, b := range h.bad {
			t.Errorf("webhook receiver: %s", b)
		}
	})
	return h
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = webhook.Verify([]byte(testkit.WebhookSecret), r.Header, body, time.Now(), 0)
	}
	var p struct{ ID int64 }
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.bad = append(h.bad, err.Error())
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	if hold := h.hold; hold != nil {
		h.active++
		h.mu.Unlock()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.active--
		if r.Context().Err() != nil {
			return // the sender is gone: nothing was delivered
		}
	}
	h.byID[r.Header.Get(webhook.HeaderID)]++
	h.plants[p.ID]++
	w.WriteHeader(http.StatusNoContent)
}

// held returns the number of deliveries being held.
func (h *hookReceiver) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active
}

// release lets the deliveries held go, and answers the next at once.
func (h *hookReceiver) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.hold)
	h.hold = nil
}

// undelivered returns the ids of ids no delivery has named.
func (h *hookReceiver) undelivered(ids []int64) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var missing []int64
	for _, id := range ids {
		if h.plants[id] == 0 {
			missing = append(missing, id)
		}
	}
	return missing
}

// duplicates returns the deliveries of a webhook-id after its first, and
// the number of deliveries.
func (h *hookReceiver) duplicates() (dups, deliveries int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.byID {
		dups += n - 1
		deliveries += n
	}
	return dups, deliveries
}

// waitDelivered waits up to limit for every id of ids to be delivered. It
// polls by itself, rather than with testkit.WaitUntil, so that a failure
// is an error, and the faults after it in TestPatroniFailover still run.
func (h *hookReceiver) waitDelivered(t *testing.T, ids []int64, limit time.Duration) {
	t.Helper()
	var missing []int64
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if missing = h.undelivered(ids); len(missing) == 0 {
			return
		}
	}
	t.Errorf("%d of %d acknowledged creates not delivered to the webhook receiver within %v, e.g. %v",
		len(missing), len(ids), limit, missing[:min(len(missing), 10)])
}

// startInstances starts n plantstore processes on db, each delivering
// webhooks to recv (none when recv is nil), with the tokens and the secret
// from the environment, and each logging to psN.log in dir; extra flags
// come last, and so override these.
func startInstances(t *testing.T, db string, recv *hookReceiver, n int, dir string, extra ...string) []*testkit.Process {
	t.Helper()
	bin := testkit.Build(t, "../cmd/plantstore")
	var procs []*testkit.Process
	for i := range n {
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("ps%d.log", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		// A lease of 5 s, not 30: a delivery whose claim was committed but
		// whose answer was lost in a failover is sent again sooner.
		args := []string{"-addr", "127.0.0.1:0", "-db", db, "-log-level", "warn"}
		if recv != nil {
			args = append(args, "-webhook", recv.srv.URL+"/hooks", "-webhook-lease", "5s")
		}
		args = append(args, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Env = testkit.Env("PLANTSTORE_TOKENS="+token, "PLANTSTORE_WEBHOOK_SECRET="+testkit.WebhookSecret)
		cmd.Stderr = log
		procs = append(procs, testkit.StartCmd(t, cmd))
	}
	return procs
}

// checkRunning fails the test, naming what it was doing, when an instance
// of procs has exited.
func checkRunning(t *testing.T, procs []*testkit.Process, during string) {
	t.Helper()
	for i, p := range procs {
		select {
		case <-p.Exited():
			t.Fatalf("instance %d exited during %s: %v\n%s", i+1, during, p.Err(), p.Stderr)
		default:
		}
	}
}

// errorLines returns the lines at level ERROR of the instances' logs in
// dir, a few of each message, or else the last lines of each.
func errorLines(dir string, n int) string {
	var out, last []string
	seen := map[string]int{}
	for i := range n {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ps%d.log", i+1)))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, line := range lines {
			_, msg, _ := strings.Cut(line, "msg=")
			if q, ok := strings.CutPrefix(msg, `"`); ok {
				msg, _, _ = strings.Cut(q, `"`)
			} else {
				msg, _, _ = strings.Cut(msg, " ")
			}
			if strings.Contains(line, "level=ERROR") && seen[msg] < 3 {
				seen[msg]++
				out = append(out, line)
			}
		}
		last = append(last, lines[max(0, len(lines)-3):]...)
	}
	if len(out) == 0 {
		return "no line at level ERROR; the last lines:\n" + strings.Join(last, "\n")
	}
	return strings.Join(out, "\n")
}

// A call is one create a load sent and what came of it.
type call struct {
	id         int64
	instance   int // the index of the URL it was sent to
	start, end time.Time
	status     int // the HTTP status; 0 when no answer came
	// code is 200 for the plant created, the Error's code for an Error,
	// -1 for an answer of neither shape, and 0 when none came.
	code       int
	retryAfter time.Duration // the Retry-After of an error 503; 0 without
	patient    bool          // sent by a worker that honours Retry-After
	err        error         // what was wrong: no answer, or an answer of neither shape
	conn       string        // the connection it went out on, for failure messages
}

func (c call) String() string {
	return fmt.Sprintf("create %d at instance %d: %d, error %d, %v (connection %s)", c.id, c.instance, c.status, c.code, c.err, c.conn)
}

// client sends every request of the tests; a create waits at most a
// minute for its answer.
var client = &http.Client{
	Timeout:   60 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64},
}

// send posts plant id, named plant-<id>, to url.
func send(url string, id int64) call {
	c := call{id: id, start: time.Now()}
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			c.conn = fmt.Sprintf("from %v, reused %v, idle %v", info.Conn.LocalAddr(), info.Reused, info.IdleTime)
		},
	})
	status, header, body, err := testkit.Post(ctx, client, url, token, fmt.Sprintf(`{"id":%d,"name":"plant-%d"}`, id, id))
	c.end, c.status, c.err = time.Now(), status, err
	if err != nil {
		return c
	}
	var a struct {
		Name  string
		Error int
	}
	json.Unmarshal(body, &a)
	switch {
	case status == 200 && a.Name == fmt.Sprint("plant-", id):
		c.code = 200
	case status != 200 && a.Error != 0:
		c.code = a.Error
		if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil && a.Error == 503 {
			c.retryAfter = time.Duration(s) * time.Second
		}
	default:
		c.code, c.err = -1, fmt.Errorf("%d with body %q", status, body)
	}
	return c
}

// A load drives creates of unique ids, counting up, at a set of
// URLs from several goroutines, and records every call.
type load struct {
	urls     []string
	opts     loadOptions
	next     atomic.Int64
	inFlight atomic.Int64 // creates sent and not yet answered
	stop     chan struct{}
	wg       sync.WaitGroup

	mu    sync.Mutex
	calls []call
	acked []int64
	// okSent is, per URL, when the last create it acknowledged was sent.
	okSent []time.Time
}

type loadOptions struct {
	workers int
	// patient makes every other worker honour Retry-After: after an error
	// 503 with it, the worker waits as long as it says, plus up to half of
	// that again at random, as the client package does. The others send
	// their next create at once, so that a window's answers show what
	// Retry-After saves the database.
	patient bool
	// pinned sends all of worker w's creates to URL w (modulo their
	// number); otherwise each create goes to the next URL in turn.
	pinned bool
	// gap, if not nil, says how long a worker waits before each create
	// to the URL of index i.
	gap  func(i int) time.Duration
	from int64 // the ids of the creates count up from from+1
}

// startLoad starts opts.workers goroutines creating plants at urls; the
// test's end halts them.
func startLoad(t *testing.T, urls []string, opts loadOptions) *load {
	l := &load{urls: urls, opts: opts, stop: make(chan struct{}), okSent: make([]time.Time, len(urls))}
	l.next.Store(opts.from)
	for w := range opts.workers {
		l.wg.Go(func() { l.work(w) })
	}
	t.Cleanup(l.halt)
	return l
}

// urls returns the URLs of procs.
func urls(procs []*testkit.Process) []string {
	var us []string
	for _, p := range procs {
		us = append(us, p.URL)
	}
	return us
}

func (l *load) work(w int) {
	patient := l.opts.patient && w%2 == 1
	for {
		id := l.next.Add(1)
		i := int(id) % len(l.urls)
		if l.opts.pinned {
			i = w % len(l.urls)
		}
		var gap time.Duration
		if l.opts.gap != nil {
			gap = l.opts.gap(i)
		}
		if !l.pause(gap) {
			return
		}
		l.inFlight.Add(1)
		c := send(l.urls[i], id)
		l.inFlight.Add(-1)
		c.instance, c.patient = i, patient
		l.mu.Lock()
		l.calls = append(l.calls, c)
		if c.code == 200 {
			l.acked = append(l.acked, id)
			if c.start.After(l.okSent[i]) {
				l.okSent[i] = c.start
			}
		}
		l.mu.Unlock()
		if patient && c.retryAfter > 0 && !l.pause(c.retryAfter+rand.N(c.retryAfter/2)) {
			return
		}
	}
}

// pause waits for d, and tells whether the load is still running.
func (l *load) pause(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-l.stop:
			return false
		default:
			return true
		}
	}
	select {
	case <-l.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// halt stops the load and waits for the creates in flight.
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// sent returns the calls answered so far.
func (l *load) sent() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// odd returns the first few calls answered with neither 200, 503 nor 504,
// or not at all.
func (l *load) odd() []string {
	var odd []string
	for _, c := range l.sent() {
		if c.code != 200 && c.code != 503 && c.code != 504 && len(odd) < 5 {
			odd = append(odd, c.String())
		}
	}
	return odd
}

// ackedIDs returns the ids acknowledged so far.
func (l *load) ackedIDs() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// waitAcked waits up to limit for n more creates to be acknowledged.
func (l *load) waitAcked(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	want := len(l.ackedIDs()) + n
	testkit.WaitUntil(t, limit, fmt.Sprintf("%d more creates acknowledged", n), func() bool { return len(l.ackedIDs()) >= want })
}

// allAckSince tells whether every instance has acknowledged a create sent
// after at.
func (l *load) allAckSince(at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.okSent {
		if !s.After(at) {
			return false
		}
	}
	return true
}

// A window describes the answers around a fault: from the first non-200
// answer to the last.
type window struct {
	answers, failed int
	first, last     time.Time   // zero when nothing failed
	codes           map[int]int // non-200 answers by code
	retryAfter      int         // error 503 answers with Retry-After
	// failedEager and failedPatient count the answers other than 200 to
	// the workers that retry at once and to those that honour Retry-After.
	failedEager, failedPatient int
	perSecond                  []string // each second of the window: answers by code
}

// window summarizes the calls answered in [from, to).
func (l *load) window(from, to time.Time) window {
	l.mu.Lock()
	var in []call
	for _, c := range l.calls {
		if !c.end.Before(from) && c.end.Before(to) {
			in = append(in, c)
		}
	}
	l.mu.Unlock()
	w := window{answers: len(in), codes: map[int]int{}}
	for _, a := range in {
		if a.code == 200 {
			continue
		}
		w.failed++
		w.codes[a.code]++
		if a.patient {
			w.failedPatient++
		} else {
			w.failedEager++
		}
		if a.code == 503 && a.retryAfter > 0 {
			w.retryAfter++
		}
		if w.first.IsZero() || a.end.Before(w.first) {
			w.first = a.end
		}
		if a.end.After(w.last) {
			w.last = a.end
		}
	}
	if w.failed == 0 {
		return w
	}
	seconds := int(w.last.Sub(w.first)/time.Second) + 1
	buckets := make([]map[int]int, seconds)
	for i := range buckets {
		buckets[i] = map[int]int{}
	}
	for _, a := range in {
		if s := int(a.end.Sub(w.first) / time.Second); !a.end.Before(w.first) && s < seconds {
			buckets[s][a.code]++
		}
	}
	for i, b := range buckets {
		w.perSecond = append(w.perSecond, fmt.Sprintf("+%ds %s", i, codeCounts(b)))
	}
	return w
}

// codeCounts formats answers by code: "200×812 503×40 none×2 other×1".
func codeCounts(m map[int]int) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		name := map[int]string{0: "none", -1: "other"}[c]
		if name == "" {
			name = fmt.Sprint(c)
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, m[c]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// checkStored checks that every id of ids is stored, reading them all
// through the instance at url.
func checkStored(t *testing.T, url string, ids []int64) (lost int) {
	t.Helper()
	stored := testkit.Plants(t, client, url, token)
	for _, id := range ids {
		if stored[id] != fmt.Sprint("plant-", id) {
			lost++
			if lost <= 10 {
				t.Errorf("create %d was acknowledged but is not stored", id)
			}
		}
	}
	return lost
}
