package memstore

import (
	"encoding/binary"
	"unsafe"

	"github.com/plantstore/plantstore"
)

// An arena keeps the names and tags of one shard's plants packed in large
// byte chunks, so that the garbage collector has no pointer per plant to
// follow: a stored plant is a ref into a chunk, and a chunk holds no
// pointers. Bytes once written never change; deleting a plant only counts
// its bytes as dead, and compact copies the live ones into new chunks once
// the dead outweigh them. An arena is guarded by its shard's lock.
type arena struct {
	chunks [][]byte
	total  int // bytes written to chunks
	live   int // bytes of plants still stored
}

// A ref locates a packed plant: the chunk's index in the high 32 bits and
// the offset in the low 32. A packed plant is the name's length as a
// uvarint, the name, and for a tagged plant the tag's length and the tag.
type ref uint64

const (
	// chunkSize is the size of an ordinary chunk, once a shard has a few.
	chunkSize = 64 << 10
	// ownChunk is the size from which a plant gets a chunk of its own.
	ownChunk = chunkSize / 8
	// compactAt is the least number of bytes written before dead bytes
	// are reclaimed, so that small shards never bother.
	compactAt = 1 << 20
)

// packedSize returns how many bytes p takes in an arena.
func packedSize(p plantstore.Plant) int {
	n := uvarintLen(len(p.Name)) + len(p.Name)
	if p.HasTag {
		n += uvarintLen(len(p.Tag)) + len(p.Tag)
	}
	return n
}

func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// put writes p's name and tag and returns where.
func (a *arena) put(p plantstore.Plant) ref {
	size := packedSize(p)
	var c []byte
	idx := len(a.chunks) - 1
	if idx >= 0 {
		c = a.chunks[idx]
	}
	if idx < 0 || cap(c)-len(c) < size {
		// Chunks start small and double up to chunkSize, so that a shard
		// holding few plants holds little memory.
		capacity := chunkSize
		if n := len(a.chunks); n < 6 {
			capacity = 1 << (10 + n)
		}
		capacity = max(capacity, size)
		if size >= ownChunk {
			capacity = size
		}
		c = make([]byte, 0, capacity)
		a.chunks = append(a.chunks, c)
		idx++
	}
	off := len(c)
	c = binary.AppendUvarint(c, uint64(len(p.Name)))
	c = append(c, p.Name...)
	if p.HasTag {
		c = binary.AppendUvarint(c, uint64(len(p.Tag)))
		c = append(c, p.Tag...)
	}
	a.chunks[idx] = c
	a.total += size
	a.live += size
	return ref(uint64(idx)<<32 | uint64(off))
}

// plant returns the plant with id at r. Its name and tag share the arena's
// memory, which is never written again.
func (a *arena) plant(id int64, r ref, tagged bool) plantstore.Plant {
	return plantIn(a.chunk(r), id, r, tagged)
}

// chunk returns the chunk that holds the plant at r. The bytes of the
// plants a chunk holds never change, so the plant can be read from it by
// plantIn without the shard's lock, after the arena has moved on.
func (a *arena) chunk(r ref) []byte { return a.chunks[r>>32] }

// plantIn returns the plant with id at r, which c, its chunk, holds.
func plantIn(c []byte, id int64, r ref, tagged bool) plantstore.Plant {
	p := plantstore.Plant{ID: id, HasTag: tagged}
	var i int
	p.Name, i = readString(c, int(uint32(r)))
	if tagged {
		p.Tag, _ = readString(c, i)
	}
	return p
}

// readString reads a uvarint length and that many bytes at c[i:], and
// returns them and the offset after them.
func readString(c []byte, i int) (string, int) {
	n, k := binary.Uvarint(c[i:])
	i += k
	if n == 0 {
		return "", i
	}
	return unsafe.String(&c[i], int(n)), i + int(n)
}

// free counts the plant at r as dead, and reports whether the arena should
// now be compacted.
func (a *arena) free(r ref, tagged bool) bool {
	a.live -= packedSize(a.plant(0, r, tagged))
	return a.total >= compactAt && a.live < a.total/2
}
