package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/webhook"
)

// A receiver checks each delivery with Verify before trusting it, and
// answers 2xx only once it has handled the event.
func Example_receiver() {
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, time.Now(), 0); err != nil {
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
		// A real receiver skips a webhook-id it has handled before.
		got <- string(body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	mo := webhook.NewMemoryOutbox()
	d, err := webhook.New(mo, []string{receiver.URL}, secret)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	ps := plantstore.New(memstore.New(),
		plantstore.OnCreate(mo.Add),
		plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
	if _, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "aroid", HasTag: true}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verified", <-got)
	// Output: verified {"id":1,"name":"Monstera","tag":"aroid"}
}

func ExampleVerify() {
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	body := []byte(`{"id":1,"name":"Monstera"}`)
	sent := time.Unix(1700000000, 0)
	sig, err := webhook.Sign(secret, "msg_1", sent, body)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_1")
	h.Set(webhook.HeaderTimestamp, "1700000000")
	h.Set(webhook.HeaderSignature, sig)

	fmt.Println(webhook.Verify(secret, h, body, sent.Add(time.Minute), 0))
	fmt.Println(webhook.Verify(secret, h, []byte(`{"id":2,"name":"Monstera"}`), sent.Add(time.Minute), 0))
	fmt.Println(webhook.Verify(secret, h, body, sent.Add(time.Hour), 0))
	// Output:
	// <nil>
	// webhook: no matching signature
	// webhook: webhook-timestamp 1700000000 is more than 5m0s from now: webhook: timestamp invalid or outside tolerance
}
