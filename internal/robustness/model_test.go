package robustness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds an operation on id 1 called at call and returned at ret.
func op(client int, in Input, out Output, call, ret int64) porcupine.Operation {
	if in.ID == 0 {
		in.ID = 1
	}
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

var (
	createA   = Input{Kind: Create, Name: "a"}
	createB   = Input{Kind: Create, Name: "b", Tag: "t", HasTag: true}
	del       = Input{Kind: Delete}
	read      = Input{Kind: Read}
	ok        = Output{Result: OK}
	conflict  = Output{Result: Conflict}
	notFound  = Output{Result: NotFound}
	down      = Output{Result: Unavailable}
	unknown   = Output{Result: Unknown}
	readA     = Output{Result: OK, Plant: Plant{Present: true, Name: "a"}}
	readB     = Output{Result: OK, Plant: Plant{Present: true, Name: "b", Tag: "t", HasTag: true}}
	readBNoTg = Output{Result: OK, Plant: Plant{Present: true, Name: "b"}}
)

// TestModel checks which histories the model finds linearizable.
func TestModel(t *testing.T) {
	type h = []porcupine.Operation
	const legal, illegal = porcupine.Ok, porcupine.Illegal
	tests := []struct {
		name    string
		history h
		want    porcupine.CheckResult
		reason  string
	}{
		{"create then read", h{op(0, createA, ok, 0, 1), op(0, read, readA, 2, 3)}, legal, ""},
		{"read misses an acknowledged create", h{op(0, createA, ok, 0, 1), op(1, read, notFound, 2, 3)}, illegal, ""},
		{"concurrent read may miss a create", h{op(0, createA, ok, 0, 3), op(1, read, notFound, 1, 2)}, legal, ""},
		{"two creates both win", h{op(0, createA, ok, 0, 3), op(1, createB, ok, 1, 2)}, illegal, ""},
		{"an absent tag is not an empty tag", h{op(0, createB, ok, 0, 1), op(0, read, readBNoTg, 2, 3)}, illegal, ""},
		{"stale read after delete", h{op(0, createB, ok, 0, 1), op(0, del, ok, 2, 3), op(1, read, readB, 4, 5)}, illegal, ""},
		{"delete of a free id", h{op(0, del, ok, 0, 1)}, illegal, ""},
		{"conflict on a free id", h{op(0, createA, conflict, 0, 1)}, illegal, ""},
		{"unavailable create kept nothing", h{op(0, createA, down, 0, 1), op(0, read, notFound, 2, 3), op(0, createB, ok, 4, 5)}, legal, ""},
		{"unavailable create was kept", h{op(0, createA, down, 0, 1), op(0, read, readA, 2, 3)}, illegal,
			"error 503 promises that nothing was kept"},
		{"unknown create kept", h{op(0, createA, unknown, 0, 1), op(1, read, readA, 2, 3), op(1, createB, conflict, 4, 5)}, legal, ""},
		{"unknown create not kept", h{op(0, createA, unknown, 0, 1), op(1, read, notFound, 2, 3), op(1, createB, ok, 4, 5),
			op(1, read, readB, 6, 7)}, legal, ""},
		{"unknown create kept late", h{op(0, createA, unknown, 0, 100), op(1, read, notFound, 2, 3), op(1, read, readA, 4, 5)}, legal,
			"an operation of unknown outcome stays pending until the end"},
		{"unknown create cannot explain another name", h{op(0, createA, unknown, 0, 100), op(1, read, readB, 2, 3)}, illegal, ""},
		{"unknown create seen before its call", h{op(1, read, readA, 0, 1), op(0, createA, unknown, 2, 100)}, illegal, ""},
		{"unknown delete either way", h{op(0, createA, ok, 0, 1), op(0, del, unknown, 2, 100), op(1, read, readA, 3, 4),
			op(1, read, notFound, 5, 6), op(1, createB, ok, 7, 8)}, legal, ""},
		{"unknown delete takes effect once", h{op(0, createA, ok, 0, 1), op(0, del, unknown, 2, 100), op(1, read, notFound, 3, 4),
			op(1, read, readA, 5, 6)}, illegal, ""},
		{"a plant forgotten", h{op(0, createA, ok, 0, 1), op(1, createB, unknown, 2, 100), op(1, read, notFound, 3, 4),
			op(2, del, ok, 5, 6)}, illegal, "what a restarted memory store does"},
		{"ids are independent", h{op(0, createA, ok, 0, 1), op(1, Input{Kind: Create, ID: 2, Name: "b"}, ok, 0, 1),
			op(0, Input{Kind: Read, ID: 2}, readBNoTg, 2, 3), op(1, read, readA, 2, 3)}, legal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(Model, tt.history, 10*time.Second); got != tt.want {
				t.Errorf("check = %v, want %v %s", got, tt.want, tt.reason)
			}
		})
	}
}

// TestHistoryPushesUnknownToTheEnd checks that an operation of unknown
// outcome returns after everything else, and that failed reads are left out.
func TestHistoryPushesUnknownToTheEnd(t *testing.T) {
	h := NewHistory()
	h.Add(0, createA, 10, unknown, 11)
	h.Add(1, read, 12, unknown, 13)
	h.Add(1, read, 14, down, 15)
	h.Add(1, del, 16, ok, 40)
	h.Add(2, createB, 50, ok, 60)
	ops := h.Operations()
	if n, u := h.Len(); n != 3 || u != 1 || len(ops) != 3 {
		t.Fatalf("Len = %d, %d; %d operations; want 3, 1; 3", n, u, len(ops))
	}
	if ops[0].Call != 10 || ops[0].Return <= 60 {
		t.Errorf("unknown create called at %d returns at %d, want called at 10, returning after 60", ops[0].Call, ops[0].Return)
	}
	if ops[1].Return != 40 || ops[2].Return != 60 {
		t.Errorf("known operations return at %d and %d, want 40 and 60", ops[1].Return, ops[2].Return)
	}
}

// TestCheckWritesVisualization checks that a history that is not
// linearizable is reported so, with porcupine's visualization written.
func TestCheckWritesVisualization(t *testing.T) {
	path := filepath.Join(t.TempDir(), "viz.html")
	history := []porcupine.Operation{op(0, createA, ok, 0, 1), op(1, read, notFound, 2, 3)}
	r, err := Check(history, 10*time.Second, path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Result != porcupine.Illegal || r.Visualization != path {
		t.Fatalf("Check = %v with visualization %q, want %v with %q", r.Result, r.Visualization, porcupine.Illegal, path)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization: %v, %v", fi, err)
	}
	r, err = Check(history[:1], 10*time.Second, path+"2")
	if err != nil || r.Result != porcupine.Ok || r.Visualization != "" {
		t.Fatalf("Check of a linearizable history = %+v, %v, want Ok and no visualization", r, err)
	}
}
