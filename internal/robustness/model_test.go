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

// TestModel checks the cases of its table. Most of its length is its table of cases; the checks are one loop.
func TestModel(t *testing.T) {
	tests := []struct {
		name    string
		history []porcupine.Operation
		want    porcupine.CheckResult
		reason  string
	}{
		{
			name:    "create then read",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(0, read, readA, 2, 3)},
			want:    porcupine.Ok,
		},
		{
			name:    "read misses an acknowledged create",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(1, read, notFound, 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "concurrent read may miss a create",
			history: []porcupine.Operation{op(0, createA, ok, 0, 3), op(1, read, notFound, 1, 2)},
			want:    porcupine.Ok,
		},
		{
			name:    "two creates both win",
			history: []porcupine.Operation{op(0, createA, ok, 0, 3), op(1, createB, ok, 1, 2)},
			want:    porcupine.Illegal,
		},
		{
			name:    "an absent tag is not an empty tag",
			history: []porcupine.Operation{op(0, createB, ok, 0, 1), op(0, read, readBNoTg, 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "stale read after delete",
			history: []porcupine.Operation{op(0, createB, ok, 0, 1), op(0, del, ok, 2, 3), op(1, read, readB, 4, 5)},
			want:    porcupine.Illegal,
		},
		{
			name:    "delete of a free id",
			history: []porcupine.Operation{op(0, del, ok, 0, 1)},
			want:    porcupine.Illegal,
		},
		{
			name:    "conflict on a free id",
			history: []porcupine.Operation{op(0, createA, conflict, 0, 1)},
			want:    porcupine.Illegal,
		},
		{
			name:    "unavailable create kept nothing",
			history: []porcupine.Operation{op(0, createA, down, 0, 1), op(0, read, notFound, 2, 3), op(0, createB, ok, 4, 5)},
			want:    porcupine.Ok,
		},
		{
			name:    "unavailable create was kept",
			history: []porcupine.Operation{op(0, createA, down, 0, 1), op(0, read, readA, 2, 3)},
			want:    porcupine.Illegal,
			reason:  "error 503 promises that nothing was kept",
		},
		{
			name:    "unknown create kept",
			history: []porcupine.Operation{op(0, createA, unknown, 0, 1), op(1, read, readA, 2, 3), op(1, createB, conflict, 4, 5)},
			want:    porcupine.Ok,
		},
		{
			name:    "unknown create not kept",
			history: []porcupine.Operation{op(0, createA, unknown, 0, 1), op(1, read, notFound, 2, 3), op(1, createB, ok, 4, 5), op(1, read, readB, 6, 7)},
			want:    porcupine.Ok,
		},
		{
			name: "unknown create kept late",
			history: []porcupine.Operation{op(0, createA, unknown, 0, 100), op(1, read, notFound, 2, 3),
				op(1, read, readA, 4, 5)},
			want:   porcupine.Ok,
			reason: "an operation of unknown outcome stays pending until the end",
		},
		{
			name:    "unknown create cannot explain another name",
			history: []porcupine.Operation{op(0, createA, unknown, 0, 100), op(1, read, readB, 2, 3)},
			want:    porcupine.Illegal,
		},
		{
			name:    "unknown create seen before its call",
			history: []porcupine.Operation{op(1, read, readA, 0, 1), op(0, createA, unknown, 2, 100)},
			want:    porcupine.Illegal,
		},
		{
			name: "unknown delete either way",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(0, del, unknown, 2, 100), op(1, read, readA, 3, 4),
				op(1, read, notFound, 5, 6), op(1, createB, ok, 7, 8)},
			want: porcupine.Ok,
		},
		{
			name: "unknown delete takes effect once",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(0, del, unknown, 2, 100), op(1, read, notFound, 3, 4),
				op(1, read, readA, 5, 6)},
			want: porcupine.Illegal,
		},
		{
			name: "a plant forgotten",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(1, createB, unknown, 2, 100), op(1, read, notFound, 3, 4),
				op(2, del, ok, 5, 6)},
			want:   porcupine.Illegal,
			reason: "what a restarted memory store does",
		},
		{
			name: "ids are independent",
			history: []porcupine.Operation{op(0, createA, ok, 0, 1), op(1, Input{Kind: Create, ID: 2, Name: "b"}, ok, 0, 1),
				op(0, Input{Kind: Read, ID: 2}, Output{Result: OK, Plant: Plant{Present: true, Name: "b"}}, 2, 3), op(1, read, readA, 2, 3)},
			want: porcupine.Ok,
		},
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
