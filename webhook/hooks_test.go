package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestAttemptHook fails the first attempt of a delivery and takes the
// second: the hook is told of both, in order, with their numbers and
// outcomes, the header it adds reaches the subscriber on every attempt,
// and the attempt goes on with the context it returned.
func TestAttemptHook(t *testing.T) {
	t.Parallel()
	var seenHeader []string
	var hmu sync.Mutex
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, attempt int) int {
		hmu.Lock()
		seenHeader = append(seenHeader, r.Header.Get("X-Trace"))
		hmu.Unlock()
		if attempt == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	type key struct{}
	var mu sync.Mutex
	var calls []string
	hooks := webhook.Hooks{Attempt: func(ctx context.Context, a webhook.Attempt, h http.Header) (context.Context, func(int, error)) {
		if h.Get(webhook.HeaderID) != a.MessageID || !strings.HasPrefix(a.MessageID, "msg_") {
			t.Errorf("attempt %+v: header webhook-id %q", a, h.Get(webhook.HeaderID))
		}
		if strings.Contains(a.Origin, secretPath) || !strings.HasPrefix(rc.url(), a.Origin) {
			t.Errorf("Origin %q: want the scheme and host of %s, no path", a.Origin, rc.url())
		}
		h.Set("X-Trace", fmt.Sprintf("attempt-%d", a.Number))
		ctx = context.WithValue(ctx, key{}, a.Number)
		return ctx, func(status int, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprintf("plant %d subscriber %d attempt %d: %d %v", a.PlantID, a.Subscriber, a.Number, status, err != nil))
		}
	}}
	// The client sees the context the hook returned.
	client := &http.Client{Transport: transportFunc(func(r *http.Request) (*http.Response, error) {
		if n, _ := r.Context().Value(key{}).(int); n == 0 {
			t.Errorf("the request's context is not the one the hook returned")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	mo := webhook.NewMemoryOutbox()
	d, _, stop := start(t, mo, []string{rc.url()}, webhook.WithHooks(hooks), webhook.WithClient(client))
	mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 7, Name: "Fern"})
	testkit.WaitUntil(t, time.Minute, "the second attempt's end", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 2
	})
	stop()
	want := []string{"plant 7 subscriber 0 attempt 1: 503 true", "plant 7 subscriber 0 attempt 2: 204 false"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"attempt-1", "attempt-2"}, seenHeader); diff != "" {
		t.Errorf("X-Trace headers received (-want +got):\n%s", diff)
	}
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAttemptHooksCompose gives two sets of Hooks: both are told of the
// attempt, in the order given, the second with the context the first
// returned; both add to the header; their ends are called in the reverse
// order; and the attempt goes on with the second's context.
func TestAttemptHooksCompose(t *testing.T) {
	t.Parallel()
	var hmu sync.Mutex
	var seen []string // the headers the subscriber received
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, attempt int) int {
		hmu.Lock()
		defer hmu.Unlock()
		seen = append(seen, r.Header.Get("X-First")+" "+r.Header.Get("X-Second"))
		return http.StatusNoContent
	})
	type key struct{}
	var mu sync.Mutex
	var calls []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s)
	}
	set := func(name string) webhook.Hooks {
		return webhook.Hooks{Attempt: func(ctx context.Context, a webhook.Attempt, h http.Header) (context.Context, func(int, error)) {
			before, _ := ctx.Value(key{}).(string)
			record(fmt.Sprintf("%s attempt, context %q", name, before))
			h.Set("X-"+name, name)
			return context.WithValue(ctx, key{}, before+name), func(status int, err error) {
				record(fmt.Sprintf("%s end %d %v", name, status, err))
			}
		}}
	}
	var onlyStart webhook.Hooks // a set whose Attempt returns no end
	onlyStart.Attempt = func(ctx context.Context, _ webhook.Attempt, _ http.Header) (context.Context, func(int, error)) {
		record("Third attempt")
		return ctx, nil
	}
	var reqContext string
	client := &http.Client{Transport: transportFunc(func(r *http.Request) (*http.Response, error) {
		reqContext, _ = r.Context().Value(key{}).(string)
		return http.DefaultTransport.RoundTrip(r)
	})}
	mo := webhook.NewMemoryOutbox()
	d, _, stop := start(t, mo, []string{rc.url()}, webhook.WithHooks(set("First")), webhook.WithHooks(webhook.Hooks{}),
		webhook.WithHooks(set("Second")), webhook.WithHooks(onlyStart), webhook.WithClient(client))
	mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 7, Name: "Fern"})
	testkit.WaitUntil(t, time.Minute, "the attempt's ends", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 5
	})
	stop()
	want := []string{
		`First attempt, context ""`,
		`Second attempt, context "First"`,
		"Third attempt",
		"Second end 204 <nil>",
		"First end 204 <nil>",
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"First Second"}, seen); diff != "" {
		t.Errorf("headers received (-want +got):\n%s", diff)
	}
	if reqContext != "FirstSecond" {
		t.Errorf("the request went on with the context %q, want the second set's, FirstSecond", reqContext)
	}
}
