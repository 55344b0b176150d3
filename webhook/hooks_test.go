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
