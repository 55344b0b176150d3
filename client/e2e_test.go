package client_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestAgainstBinary talks to the real plantstore binary over loopback,
// with memory storage: the token from its environment, and its default
// status mode (an error code in a 400). What the client does with each
// answer is tested over the real handler in process (TestRoundTrip,
// TestErrorsFromServer, TestAllFollowsPages).
func TestAgainstBinary(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, "github.com/plantstore/plantstore/cmd/plantstore")
	url := testkit.Start(t, bin, testkit.Env("PLANTSTORE_TOKENS="+token), "-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "warn").URL
	c, err := client.New(url, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	monstera := plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "indoor", HasTag: true}
	if _, err := c.Create(ctx, monstera); err != nil {
		t.Fatalf("Create: %v", err)
	}
	_, err = c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Fern"})
	if ce := checkError(t, err, 409, plantstore.ErrConflict); ce.StatusCode != 400 {
		t.Errorf("duplicate Create: status %d, want code 409 in a 400", ce.StatusCode)
	}
	got, err := c.Plant(ctx, 1)
	if err != nil {
		t.Fatalf("Plant: %v", err)
	}
	if diff := cmp.Diff(plantstore.Plant(monstera), got); diff != "" {
		t.Errorf("Plant mismatch (-want +got):\n%s", diff)
	}
	wrong, err := client.New(url, client.WithToken("wrong"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Plant(ctx, 1)
	checkError(t, err, 401, client.ErrUnauthorized)
}
