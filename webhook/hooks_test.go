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

// TestAttemptHooks gives two sets of Hooks, with an empty set between
// them and after them a set whose Attempt returns no end, and fails the
// first attempt of a delivery and takes the second. On each attempt both
// sets are told of it, in the order given, with its number, plant,
// subscriber, webhook-id and origin, the second with the context the
// first returned; the headers both add reach the subscriber; the attempt
// goes on with the second's context; and the ends are called in the
// reverse order, with the attempt's outcome.
func TestAttemptHooks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls, seen, reqContexts []string // the hooks' calls; the headers received; the contexts sent with
	record := func(list *[]string, s string) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, s)
	}
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, attempt int) int {
		record(&seen, r.Header.Get("X-First")+" "+r.Header.Get("X-Second"))
		if attempt == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	type key struct{}
	set := func(name string) webhook.Hooks {
		return webhook.Hooks{Attempt: func(ctx context.Context, a webhook.Attempt, h http.Header) (context.Context, func(int, error)) {
			if h.Get(webhook.HeaderID) != a.MessageID || !strings.HasPrefix(a.MessageID, "msg_") {
				t.Errorf("attempt %+v: header webhook-id %q", a, h.Get(webhook.HeaderID))
			}
			if strings.Contains(a.Origin, secretPath) || !strings.HasPrefix(rc.url(), a.Origin) {
				t.Errorf("Origin %q: want the scheme and host of %s, no path", a.Origin, rc.url())
			}
			before, _ := ctx.Value(key{}).(string)
			record(&calls, fmt.Sprintf("%s: plant %d subscriber %d attempt %d, context %q", name, a.PlantID, a.Subscriber, a.Number, before))
			h.Set("X-"+name, fmt.Sprintf("%s-%d", name, a.Number))
			return context.WithValue(ctx, key{}, before+name), func(status int, err error) {
				record(&calls, fmt.Sprintf("%s end: %d %v", name, status, err != nil))
			}
		}}
	}
	onlyStart := webhook.Hooks{Attempt: func(ctx context.Context, _ webhook.Attempt, _ http.Header) (context.Context, func(int, error)) {
		record(&calls, "Third")
		return ctx, nil
	}}
	client := &http.Client{Transport: transportFunc(func(r *http.Request) (*http.Response, error) {
		c, _ := r.Context().Value(key{}).(string)
		record(&reqContexts, c)
		return http.DefaultTransport.RoundTrip(r)
	})}
	mo := webhook.NewMemoryOutbox()
	d, _, stop := start(t, mo, []string{rc.url()}, webhook.WithHooks(set("First")), webhook.WithHooks(webhook.Hooks{}),
		webhook.WithHooks(set("Second")), webhook.WithHooks(onlyStart), webhook.WithClient(client))
	mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 7, Name: "Fern"})
	testkit.WaitUntil(t, time.Minute, "the second attempt's ends", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 10
	})
	stop()
	want := []string{
		`First: plant 7 subscriber 0 attempt 1, context ""`,
		`Second: plant 7 subscriber 0 attempt 1, context "First"`,
		"Third",
		"Second end: 503 true",
		"First end: 503 true",
		`First: plant 7 subscriber 0 attempt 2, context ""`,
		`Second: plant 7 subscriber 0 attempt 2, context "First"`,
		"Third",
		"Second end: 204 false",
		"First end: 204 false",
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"First-1 Second-1", "First-2 Second-2"}, seen); diff != "" {
		t.Errorf("headers received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"FirstSecond", "FirstSecond"}, reqContexts); diff != "" {
		t.Errorf("contexts the requests went on with (-want +got):\n%s; want the second set's", diff)
	}
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
