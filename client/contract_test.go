package client_test

import (
	"testing"

	"github.com/plantstore/plantstore/client"
)

// TestAnswersOutsideContract answers each call with a success the
// contract does not give it: POST /plants is answered 200 with a Plant,
// GET /plants/{id} 200 with that plant, DELETE 204, GET /plants 200 with
// an array of plants, GET /readyz 200; and with a status of the redirect
// class that leads nowhere.
func TestAnswersOutsideContract(t *testing.T) {
	t.Parallel()
	const plant = `{"id":1,"name":"Monstera"}`
	create := create(1, "Monstera")
	read, del, list := read(1), del(1), list(0)
	tests := []struct {
		name   string
		call   op
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
		{name: "read, 300", call: read, status: 300},
		{name: "read, 304", call: read, status: 304},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := ""
			if tt.body != "" {
				ct = "application/json"
			}
			srv, requests := serveAnswer(t, tt.status, ct, tt.body)
			c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, RetryUnknownOutcome: true}))
			checkProtocolError(t, tt.call(t.Context(), c), tt.status, tt.write)
			wantCount(t, requests, 1, "requests: another attempt would get the same answer")
		})
	}
}
