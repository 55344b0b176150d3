package memstore

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// check verifies t's structure: keys ascending within and across nodes,
// separators bounding their subtrees, nodes other than the root and the
// last leaf at least a quarter full, no stale references past a node's end, and the leaf chain
// visiting every leaf in order. It returns the keys in order and the number
// of leaves.
func check(tb testing.TB, t *btree) ([]int64, int) {
	tb.Helper()
	var keys []int64
	var leaves []*leaf
	// hi bounds keys from above only when hasHi: math.MaxInt64 may be a key.
	var walk func(n *inner, h int, lo, hi int64, hasHi, root bool)
	walk = func(n *inner, h int, lo, hi int64, hasHi, root bool) {
		if n.n < 1 || (!root && n.n < minInner) {
			tb.Fatalf("inner node with %d children at height %d", n.n, h)
		}
		for i := n.n; i < innerCap; i++ {
			if n.kids[i] != nil || n.leaves[i] != nil {
				tb.Fatalf("inner node keeps a child at %d past its end %d", i, n.n)
			}
		}
		for i := range n.n {
			clo, chi, cHasHi := lo, hi, hasHi
			if i > 0 {
				clo = n.keys[i-1]
			}
			if i < n.n-1 {
				chi, cHasHi = n.keys[i], true
			}
			if h > 1 {
				walk(n.kids[i], h-1, clo, chi, cHasHi, false)
				continue
			}
			l := n.leaves[i]
			if !(root && n.n == 1) && l.next != nil && l.n < minLeaf {
				tb.Fatalf("leaf with %d entries", l.n)
			}
			for j := l.n; j < leafCap; j++ {
				if l.vals[j] != 0 {
					tb.Fatalf("leaf keeps a value at %d past its end %d", j, l.n)
				}
			}
			for _, k := range l.keys[:l.n] {
				if k < clo || cHasHi && k >= chi {
					tb.Fatalf("key %d outside its bounds [%d, %d)", k, clo, chi)
				}
				keys = append(keys, k)
			}
			leaves = append(leaves, l)
		}
	}
	walk(t.root, t.height, math.MinInt64, 0, false, true)
	if !slices.IsSorted(keys) {
		tb.Fatal("keys out of order")
	}
	for i, l := range leaves {
		var want *leaf
		if i+1 < len(leaves) {
			want = leaves[i+1]
		}
		if l.next != want {
			tb.Fatalf("leaf %d of %d is chained to the wrong leaf", i, len(leaves))
		}
	}
	return keys, len(leaves)
}

func TestBTreeAgainstMap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    func(r *rand.Rand, i int) int64
		reason string
	}{
		{"ascending", func(_ *rand.Rand, i int) int64 { return int64(i) }, "appends split leaves unevenly"},
		{"descending", func(_ *rand.Rand, i int) int64 { return int64(-i) }, ""},
		{"descending onto full leaves", func(_ *rand.Rand, i int) int64 {
			if i < 5000 {
				return int64(i)
			}
			return int64(1_000_000 - i)
		}, "each id lands just past the end of a full leaf"},
		{"random narrow", func(r *rand.Rand, _ int) int64 { return r.Int64N(20_000) }, "many conflicts and re-creates"},
		{"random wide", func(r *rand.Rand, _ int) int64 { return int64(r.Uint64()) }, "extreme ids"},
	}
	deleteOrders := []struct {
		name  string
		order func(r *rand.Rand, keys []int64)
	}{
		{"delete random", func(r *rand.Rand, keys []int64) {
			r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}},
		{"delete ascending", func(*rand.Rand, []int64) {}}, // underflows borrow from the right
		{"delete descending", func(_ *rand.Rand, keys []int64) { slices.Reverse(keys) }},
	}
	for _, tt := range tests {
		for _, do := range deleteOrders {
			t.Run(tt.name+"/"+do.name, func(t *testing.T) {
				testBTree(t, tt.key, do.order)
			})
		}
	}
}

// testBTree inserts 20,000 keys into a tree, then deletes them all in
// deleteOrder, checking the tree against a map and its structure as it goes.
func testBTree(t *testing.T, key func(r *rand.Rand, i int) int64, deleteOrder func(r *rand.Rand, keys []int64)) {
	r := rand.New(rand.NewPCG(1, 2))
	var bt btree
	bt.init()
	model := map[int64]ref{}
	const n = 20_000
	for i := range n {
		k := key(r, i)
		val := ref(i)
		_, had := model[k]
		slot := bt.insert(k, i%2 == 0)
		if ok := slot != nil; ok == had {
			t.Fatalf("insert(%d) = %v with the key present: %v", k, ok, had)
		}
		if !had {
			*slot = val
			model[k] = val
		}
	}
	want := slices.Sorted(maps.Keys(model))
	got, leaves := check(t, &bt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("keys after inserts mismatch (-want +got):\n%s", diff)
	}
	// Inserts split leaves in the middle or split off the last one,
	// so every other leaf stays at least half full.
	if most := len(want)/(leafCap/2) + 2; leaves > most {
		t.Errorf("%d keys take %d leaves, want at most %d", len(want), leaves, most)
	}
	// get checks that every key of keys holds its value and tag flag,
	// the tag set for even values (see the inserts).
	get := func(keys []int64) {
		t.Helper()
		for _, k := range keys {
			if got, tagged, ok := bt.get(k); !ok || got != model[k] || tagged != (got%2 == 0) {
				t.Fatalf("get(%d) = %d, %v, %v, want %d, %v, true", k, got, tagged, ok, model[k], model[k]%2 == 0)
			}
		}
	}
	get(want)
	// Delete, checking the structure and the keys left as it shrinks:
	// merges and borrowing move values and tag flags between leaves.
	deleteOrder(r, want)
	for i, k := range want {
		if !bt.delete(k) {
			t.Fatalf("delete(%d) = false, want true", k)
		}
		if bt.delete(k) {
			t.Fatalf("second delete(%d) = true, want false", k)
		}
		if i%2000 == 0 {
			check(t, &bt)
			get(want[i+1:])
		}
	}
	if got, _ := check(t, &bt); len(got) != 0 {
		t.Fatalf("keys after deleting all = %v, want none", got)
	}
	if bt.height != 1 || bt.root.n != 1 {
		t.Errorf("tree after deleting all has height %d and %d children, want one empty leaf", bt.height, bt.root.n)
	}
}

// TestCountLess checks the line-stepping searches against sort.Search on
// sorted runs of every length a node holds, with keys on, between and
// beyond the stored ones.
func TestCountLess(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for n := range leafCap + 1 {
		keys := make([]int64, n)
		k := int64(-50)
		for i := range keys {
			k += 1 + r.Int64N(3)
			keys[i] = k
		}
		for key := int64(-55); key <= k+5; key++ {
			less := sort.Search(n, func(i int) bool { return keys[i] >= key })
			atMost := sort.Search(n, func(i int) bool { return keys[i] > key })
			if got := countLess(keys, key); got != less {
				t.Fatalf("countLess(%v, %d) = %d, want %d", keys, key, got, less)
			}
			if got := countAtMost(keys, key); got != atMost {
				t.Fatalf("countAtMost(%v, %d) = %d, want %d", keys, key, got, atMost)
			}
		}
	}
}

func TestBTreeAppendFrom(t *testing.T) {
	t.Parallel()
	var bt btree
	bt.init()
	for k := range int64(1000) {
		*bt.insert(k*2, false) = 0
	}
	tests := []struct {
		name string
		from int64
		max  int
		want []int64
	}{
		{"start", math.MinInt64, 3, []int64{0, 2, 4}},
		{"inclusive", 10, 2, []int64{10, 12}},
		{"between", 11, 2, []int64{12, 14}},
		{"end", 1996, 5, []int64{1996, 1998}},
		{"past end", 1999, 5, nil},
		{"across leaves", 158, 4, []int64{158, 160, 162, 164}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for _, e := range bt.appendFrom(nil, tt.from, tt.max) {
				got = append(got, e.key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("appendFrom(%d, %d) mismatch (-want +got):\n%s", tt.from, tt.max, diff)
			}
		})
	}
}
