package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
)

// TestAnswersOutsideContract answers each call with a success the
// contract does not give it: POST /plants is answered 200 with a Plant,
// GET /plants/{id} 200 with that plant, DELETE 204, GET /plants 200 with
// an array of plants, GET /readyz 200.
//
// Most of its length is its table of cases; the checks are one loop.
func TestAnswersOutsideContract(t *testing.T) {
	t.Parallel()
	const plant = `{"id":1,"name":"Monstera"}`
	create := func(ctx context.Context, c *client.Client) error {
		_, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera"})
		return err
	}
	read := func(ctx context.Context, c *client.Client) error {
		_, err := c.Plant(ctx, 1)
		return err
	}
	del := func(ctx context.Context, c *client.Client) error { return c.Delete(ctx, 1) }
	list := func(ctx context.Context, c *client.Client) error {
		_, err := c.List(ctx, plantstore.ListOptions{})
		return err
	}
	all := func(ctx context.Context, c *client.Client) error {
		for _, err := range c.All(ctx) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	ping := func(ctx context.Context, c *client.Client) error { return c.Ping(ctx) }

	tests := []struct {
		name   string
		call   func(context.Context, *client.Client) error
		write  bool
		status int
		body   string
		reason string
	}{
		{name: "create, empty 201", call: create, write: true, status: 201,
			reason: "something claims to have created it, but not as the API does: the plant may or may not be stored"},
		{name: "create, 201 with a Plant", call: create, write: true, status: 201, body: plant},
		{name: "create, 202 with a Plant", call: create, write: true, status: 202, body: plant,
			reason: "accepted is not stored"},
		{name: "create, 204", call: create, write: true, status: 204},
		{name: "create, empty 200", call: create, write: true, status: 200},
		{name: "create, 200 with an array", call: create, write: true, status: 200, body: "[" + plant + "]"},
		{name: "create, 200 with a Plant without a name", call: create, write: true, status: 200, body: `{"id":1}`},
		{name: "read, 201 with the plant", call: read, status: 201, body: plant},
		{name: "read, 203 with the plant", call: read, status: 203, body: plant,
			reason: "a proxy's transformed copy is not the server's answer"},
		{name: "read, 204", call: read, status: 204},
		{name: "read, empty 200", call: read, status: 200},
		{name: "read, 200 with another plant", call: read, status: 200, body: `{"id":2,"name":"Fern"}`},
		{name: "delete, empty 200", call: del, write: true, status: 200,
			reason: "the contract's delete answers 204"},
		{name: "delete, 200 with a body", call: del, write: true, status: 200, body: `{"deleted":true}`},
		{name: "delete, 202", call: del, write: true, status: 202, reason: "accepted is not deleted"},
		{name: "list, 201 with an array", call: list, status: 201, body: "[" + plant + "]"},
		{name: "list, 204", call: list, status: 204},
		{name: "list, 206 with an array", call: list, status: 206, body: "[" + plant + "]"},
		{name: "list, 200 with an object", call: list, status: 200, body: plant},
		{name: "list, 200 with a plant without an id", call: list, status: 200, body: `[{"name":"Monstera"}]`},
		{name: "all, 204", call: all, status: 204},
		{name: "ping, 201", call: ping, status: 201},
		{name: "ping, 202", call: ping, status: 202},
		{name: "ping, 204", call: ping, status: 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tt.body != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, RetryUnknownOutcome: true}))
			err := tt.call(t.Context(), c)
			pe, ok := errors.AsType[*client.ProtocolError](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *client.ProtocolError", err, err)
			}
			if pe.StatusCode != tt.status {
				t.Errorf("StatusCode %d, want %d", pe.StatusCode, tt.status)
			}
			if tt.write {
				checkSentinel(t, err, plantstore.ErrOutcomeUnknown)
			} else {
				checkSentinel(t, err, nil)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1: another attempt would get the same answer", n)
			}
		})
	}
}
