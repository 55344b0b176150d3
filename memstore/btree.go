package memstore

// This file holds the ordered index behind Store: a B+ tree keyed
// by plant id whose leaves keep each plant as a ref into its shard's arena
// (see arena.go). Leaves hold no pointer but the one to the next leaf,
// first, so the garbage collector scans a leaf in one word. Leaves are
// chained left to right so that a range scan walks them without going back
// up the tree. A btree is not safe for concurrent use; its shard's lock
// guards it.

const (
	// leafCap makes a leaf fit the 2048-byte allocation size class exactly.
	leafCap = 119
	// innerCap makes an inner node fit the 1536-byte size class exactly.
	innerCap = 64

	// A node other than the root is rebalanced with a sibling once a delete
	// leaves it under a quarter full, so that deleting most plants frees
	// most of the memory they held. Only the last leaf, just split off for
	// an ascending id, may hold fewer before any delete reaches it.
	minLeaf  = leafCap / 4
	minInner = innerCap / 4
)

// A leaf holds up to leafCap plants in ascending id order.
type leaf struct {
	next   *leaf // the leaf holding the next greater ids, or nil
	n      int
	keys   [leafCap]int64
	vals   [leafCap]ref
	tagged [leafCap]bool
}

// An inner node routes ids to its n children. keys[i] is a lower bound of
// the ids under child i+1 and greater than every id under child i. The
// children are leaves on the level just above the leaves, inner nodes
// elsewhere; only one of kids and leaves is used, which costs less than a
// byte per plant.
type inner struct {
	n      int
	keys   [innerCap - 1]int64
	kids   [innerCap]*inner
	leaves [innerCap]*leaf
}

// A btree maps plant ids to refs of packed plants. Its zero value is not usable;
// call init.
//
// It is kept, rather than a maintained generic tree, because it is
// measurably better where users feel it. TestTreeComparison (trees_test.go)
// runs Store against the same sharded store on github.com/google/btree's
// BTreeG and github.com/tidwall/btree's Map, holding plants by value, at
// 1M plants with ten-byte names and scrambled ids, the three taking turns
// in each of 10 rounds; medians of the process's CPU time per op, garbage
// collection included (linux/amd64, 2 cores shared with other work):
//
//	                                   this tree  google/btree  tidwall/btree
//	create, filling to 1M              227 ns     776 ns        674 ns
//	create, ascending ids               65 ns     315 ns        202 ns
//	read                               375 ns     891 ns        585 ns
//	page of 100, walking the store      12.0 µs    13.2 µs       12.0 µs
//	page of 100, at a random id         14.6 µs    26.6 µs       24.4 µs
//	delete                             326 ns     603 ns        480 ns
//	live heap per plant                 36.9 B     88.1 B        88.2 B
//	create+delete at 1M, 2 KB garbage    1.35 µs    3.96 µs       3.77 µs
//	  99th percentile of a create        0.96 µs    5.39 µs       5.18 µs
//	  longest GC stop-the-world pause  172 µs     295 µs        279 µs
//
// The pauses differ by no more than the noise of a shared machine; the
// collector runs twice as often over the smaller heap, but has nothing per
// plant to scan. Reads and lists read each name's first byte, as an answer
// does.
type btree struct {
	root *inner
	// height is the number of inner levels: 1 when root's children are
	// leaves.
	height int
}

func (t *btree) init() {
	t.root = &inner{n: 1}
	t.root.leaves[0] = &leaf{}
	t.height = 1
}

// child returns the index of the child of n whose subtree may hold key.
func (n *inner) child(key int64) int {
	return countAtMost(n.keys[:n.n-1], key)
}

// search returns the index of the first key in l not less than key.
func (l *leaf) search(key int64) int {
	keys := l.keys[:l.n]
	if len(keys) > 0 && keys[len(keys)-1] < key {
		return len(keys) // appending ids in ascending order ends here at once
	}
	return countLess(keys, key)
}

// lineKeys is how many keys one 64-byte cache line holds.
const lineKeys = 8

// countLess returns how many of keys, in ascending order, are less than
// key. It steps through the keys a cache line at a time and then within
// one line, rather than bisecting them: the processor runs ahead along the
// predictable steps and fetches the lines they need at the same time,
// where each step of a binary search waits for the line the last one
// fetched. In a large store, whose nodes are seldom in cache, that is most
// of the cost of finding a key.
func countLess(keys []int64, key int64) int {
	i := 0
	for i+lineKeys < len(keys) && keys[i+lineKeys-1] < key {
		i += lineKeys
	}
	for i < len(keys) && keys[i] < key {
		i++
	}
	return i
}

// countAtMost returns how many of keys, in ascending order, are at most
// key, in the way countLess does.
func countAtMost(keys []int64, key int64) int {
	i := 0
	for i+lineKeys < len(keys) && keys[i+lineKeys-1] <= key {
		i += lineKeys
	}
	for i < len(keys) && keys[i] <= key {
		i++
	}
	return i
}

// findLeaf returns the leaf whose range holds key.
func (t *btree) findLeaf(key int64) *leaf {
	n := t.root
	for h := t.height; h > 1; h-- {
		n = n.kids[n.child(key)]
	}
	return n.leaves[n.child(key)]
}

// get returns the ref of the plant stored under key.
func (t *btree) get(key int64) (val ref, tagged, ok bool) {
	l := t.findLeaf(key)
	i := l.search(key)
	if i < l.n && l.keys[i] == key {
		return l.vals[i], l.tagged[i], true
	}
	return 0, false, false
}

// An entry is one plant's ref copied out of a tree.
type entry struct {
	key    int64
	val    ref
	tagged bool
}

// appendFrom appends to dst, in ascending order, at most max entries whose
// keys are at least from.
func (t *btree) appendFrom(dst []entry, from int64, max int) []entry {
	l := t.findLeaf(from)
	i := l.search(from)
	for max > 0 {
		if i >= l.n {
			if l = l.next; l == nil {
				break
			}
			i = 0
			continue
		}
		dst = append(dst, entry{key: l.keys[i], val: l.vals[i], tagged: l.tagged[i]})
		i++
		max--
	}
	return dst
}

// insert makes room for key and returns the slot where its value goes, or
// nil when key is already present, in which case it changes nothing. The
// slot is valid until the tree next changes.
func (t *btree) insert(key int64, tagged bool) *ref {
	slot, right, sep := t.root.insert(t.height, key, tagged)
	if right != nil {
		root := &inner{n: 2}
		root.kids[0], root.kids[1] = t.root, right
		root.keys[0] = sep
		t.root = root
		t.height++
	}
	return slot
}

// insert makes room for key in the subtree of n, whose height is h, and
// returns its slot as btree.insert does. When n had to split, it also
// returns the new right sibling and the lower bound of its keys.
func (n *inner) insert(h int, key int64, tagged bool) (slot *ref, right *inner, sep int64) {
	i := n.child(key)
	if h == 1 {
		slot, r, s := n.leaves[i].insert(key, tagged)
		if r != nil {
			right, sep = n.insertChild(i+1, s, nil, r)
		}
		return slot, right, sep
	}
	slot, r, s := n.kids[i].insert(h-1, key, tagged)
	if r != nil {
		right, sep = n.insertChild(i+1, s, r, nil)
	}
	return slot, right, sep
}

// insertChild puts kid (or lf, on the lowest inner level) at index i of n,
// with sep as the lower bound of its keys, splitting n when it is full.
func (n *inner) insertChild(i int, sep int64, kid *inner, lf *leaf) (*inner, int64) {
	if n.n < innerCap {
		n.putChild(i, sep, kid, lf)
		return nil, 0
	}
	const half = innerCap / 2
	r := &inner{n: innerCap - half}
	up := n.keys[half-1]
	copy(r.keys[:], n.keys[half:n.n-1])
	copy(r.kids[:], n.kids[half:n.n])
	copy(r.leaves[:], n.leaves[half:n.n])
	clear(n.kids[half:n.n])
	clear(n.leaves[half:n.n])
	n.n = half
	if i <= half {
		n.putChild(i, sep, kid, lf)
	} else {
		r.putChild(i-half, sep, kid, lf)
	}
	return r, up
}

// putChild inserts a child at index i of n, which has room for it.
func (n *inner) putChild(i int, sep int64, kid *inner, lf *leaf) {
	copy(n.keys[i:n.n], n.keys[i-1:n.n-1])
	copy(n.kids[i+1:n.n+1], n.kids[i:n.n])
	copy(n.leaves[i+1:n.n+1], n.leaves[i:n.n])
	n.keys[i-1] = sep
	n.kids[i], n.leaves[i] = kid, lf
	n.n++
}

// insert makes room for key in l and returns its slot as btree.insert
// does. When l had to split, it also returns the new right sibling and its
// least key.
func (l *leaf) insert(key int64, tagged bool) (slot *ref, right *leaf, sep int64) {
	i := l.search(key)
	if i < l.n && l.keys[i] == key {
		return nil, nil, 0
	}
	if l.n < leafCap {
		return l.put(i, key, tagged), nil, 0
	}
	r := &leaf{next: l.next}
	l.next = r
	if i == l.n && r.next == nil {
		// Ids arriving in ascending order would leave every leaf half
		// full after a middle split; leaving the last leaf full keeps them
		// packed. Other leaves split in the middle, or ids descending
		// just below a full leaf would each get a leaf of their own.
		return r.put(0, key, tagged), r, key
	}
	const half = (leafCap + 1) / 2
	r.n = copy(r.keys[:], l.keys[half:l.n])
	copy(r.vals[:], l.vals[half:l.n])
	copy(r.tagged[:], l.tagged[half:l.n])
	clear(l.vals[half:l.n])
	l.n = half
	if i <= half {
		slot = l.put(i, key, tagged)
	} else {
		slot = r.put(i-half, key, tagged)
	}
	return slot, r, r.keys[0]
}

// put inserts key at index i of l, which has room for it, and returns the
// slot for its value.
func (l *leaf) put(i int, key int64, tagged bool) *ref {
	if i < l.n {
		copy(l.keys[i+1:l.n+1], l.keys[i:l.n])
		copy(l.vals[i+1:l.n+1], l.vals[i:l.n])
		copy(l.tagged[i+1:l.n+1], l.tagged[i:l.n])
	}
	l.keys[i], l.tagged[i] = key, tagged
	l.n++
	return &l.vals[i]
}

// delete removes key and reports whether it was present.
func (t *btree) delete(key int64) bool {
	ok := t.root.delete(t.height, key)
	for t.height > 1 && t.root.n == 1 {
		t.root = t.root.kids[0]
		t.height--
	}
	return ok
}

// delete removes key from the subtree of n, whose height is h, and
// rebalances the child it came from when that child is under its minimum.
func (n *inner) delete(h int, key int64) bool {
	i := n.child(key)
	if h == 1 {
		l := n.leaves[i]
		if !l.remove(key) {
			return false
		}
		if l.n < minLeaf {
			n.rebalanceLeaves(i)
		}
		return true
	}
	k := n.kids[i]
	if !k.delete(h-1, key) {
		return false
	}
	if k.n < minInner {
		n.rebalanceInners(i)
	}
	return true
}

// remove removes key from l and reports whether it was present. The freed
// slot is cleared; the plant's bytes stay in the arena until it is
// compacted.
func (l *leaf) remove(key int64) bool {
	i := l.search(key)
	if i >= l.n || l.keys[i] != key {
		return false
	}
	copy(l.keys[i:], l.keys[i+1:l.n])
	copy(l.vals[i:], l.vals[i+1:l.n])
	copy(l.tagged[i:], l.tagged[i+1:l.n])
	l.n--
	l.vals[l.n] = 0
	return true
}

// siblings returns the indexes of child i of n and of a neighbour to
// rebalance it with, left one first, or false when i has no neighbour.
func (n *inner) siblings(i int) (left, right int, ok bool) {
	switch {
	case i+1 < n.n:
		return i, i + 1, true
	case i > 0:
		return i - 1, i, true
	}
	return 0, 0, false
}

// rebalanceLeaves merges leaf child i of n with a neighbour, or shares the
// neighbour's entries with it when both do not fit in one leaf.
func (n *inner) rebalanceLeaves(i int) {
	li, ri, ok := n.siblings(i)
	if !ok {
		return
	}
	a, b := n.leaves[li], n.leaves[ri]
	total := a.n + b.n
	if total <= leafCap {
		copy(a.keys[a.n:], b.keys[:b.n])
		copy(a.vals[a.n:], b.vals[:b.n])
		copy(a.tagged[a.n:], b.tagged[:b.n])
		a.n = total
		a.next = b.next
		n.removeChild(ri)
		return
	}
	want := total / 2
	if a.n < want {
		// Move the first want-a.n entries of b to the end of a.
		m := want - a.n
		copy(a.keys[a.n:], b.keys[:m])
		copy(a.vals[a.n:], b.vals[:m])
		copy(a.tagged[a.n:], b.tagged[:m])
		copy(b.keys[:], b.keys[m:b.n])
		copy(b.vals[:], b.vals[m:b.n])
		copy(b.tagged[:], b.tagged[m:b.n])
		clear(b.vals[b.n-m : b.n])
		a.n, b.n = want, b.n-m
	} else {
		// Move the last a.n-want entries of a to the front of b.
		m := a.n - want
		copy(b.keys[m:], b.keys[:b.n])
		copy(b.vals[m:], b.vals[:b.n])
		copy(b.tagged[m:], b.tagged[:b.n])
		copy(b.keys[:m], a.keys[want:a.n])
		copy(b.vals[:m], a.vals[want:a.n])
		copy(b.tagged[:m], a.tagged[want:a.n])
		clear(a.vals[want:a.n])
		a.n, b.n = want, b.n+m
	}
	n.keys[li] = b.keys[0]
}

// rebalanceInners merges inner child i of n with a neighbour, or shares
// the neighbour's children with it when both do not fit in one node.
func (n *inner) rebalanceInners(i int) {
	li, ri, ok := n.siblings(i)
	if !ok {
		return
	}
	a, b := n.kids[li], n.kids[ri]
	// Lay both nodes out as one, with the separator between them pulled
	// down from n, then cut that in two again or keep it whole.
	var keys [2 * innerCap]int64
	var kids [2 * innerCap]*inner
	var leaves [2 * innerCap]*leaf
	total := a.n + b.n
	copy(keys[:], a.keys[:a.n-1])
	keys[a.n-1] = n.keys[li]
	copy(keys[a.n:], b.keys[:b.n-1])
	copy(kids[:], a.kids[:a.n])
	copy(kids[a.n:], b.kids[:b.n])
	copy(leaves[:], a.leaves[:a.n])
	copy(leaves[a.n:], b.leaves[:b.n])
	if total <= innerCap {
		copy(a.keys[:], keys[:total-1])
		copy(a.kids[:], kids[:total])
		copy(a.leaves[:], leaves[:total])
		a.n = total
		n.removeChild(ri)
		return
	}
	want := total / 2
	clear(a.kids[:])
	clear(a.leaves[:])
	clear(b.kids[:])
	clear(b.leaves[:])
	copy(a.keys[:], keys[:want-1])
	copy(a.kids[:], kids[:want])
	copy(a.leaves[:], leaves[:want])
	a.n = want
	n.keys[li] = keys[want-1]
	copy(b.keys[:], keys[want:total-1])
	copy(b.kids[:], kids[want:total])
	copy(b.leaves[:], leaves[want:total])
	b.n = total - want
}

// removeChild drops child i of n, i > 0, with the separator before it.
func (n *inner) removeChild(i int) {
	copy(n.keys[i-1:], n.keys[i:n.n-1])
	copy(n.kids[i:], n.kids[i+1:n.n])
	copy(n.leaves[i:], n.leaves[i+1:n.n])
	n.n--
	n.kids[n.n], n.leaves[n.n] = nil, nil
}
