package sqlstore

import (
	"runtime"
	"time"
)

// A pacer holds the group commit's policy: when the committer stops
// waiting for more Creates and commits the batch it holds.
//
// A batch opens with every Create waiting. The committer then waits for
// more until the batch holds as many as it expects callers (the target),
// for at most maxLinger from the batch's opening, and never so long
// that a Create would be left with less than the quarter of its timeout
// that commitBatch requires. A batch that reaches its target yields once
// (see [Store.probe]) and takes the Creates the yield brought. The target
// follows the callers, not the commit's time: it rises to the last
// batch's size plus the Creates that came while that batch committed
// (callers it did not count), stays while batches fill, and falls to the
// size of a batch that its bound closed (the callers that came). So a
// fixed set of callers, such as an HTTP server's connections, is
// committed in full batches, each closed the moment its last caller is
// back; a lone caller never waits; a caller that leaves costs one wait
// of maxLinger.
//
// Where the flusher flushes batches beside the committer (see
// [flusher]), a batch is full at half the target (two lanes), and the
// Creates taken beyond it wait for the next batch, which commits while
// the last one is flushed: the other half of the callers has work
// meanwhile. There the callers whose flush is still to come count
// towards the target instead of the last batch, whose callers may be
// back among those waiting, and there is no yield: the callers it would
// bring are the next batch's.
//
// The committer it replaces waited for the last batch's size plus those
// waiting, but no longer than twice the last commit's time. Where the
// flush is cheap that is too short for the callers to come back on the
// core they share with the committer: short batches made quick commits,
// quick commits shorter waits, and it settled at one or two Creates a
// commit. With the binary on one core and a SQLite file whose flush is
// free (tmpfs), over 8 to 512 connections, it held 1.0 to 1.2 Creates a
// commit, where this one fills its batches (8.0 Creates a commit at 8
// connections, 32.0 at 32, 110 at 128) and makes 2.2 to 2.8 times the
// creates/s. With this VM's disk (fdatasync 0.29 ms), where the callers
// are back before the commit ends, both fill their batches at 8 and 32
// connections; at 128 and 512 the old one's batches broke down (29 and
// 3.7 Creates a commit, a p99 of 1.56 s at 512) and this one makes 1.27
// and 3.0 times the creates/s (83 Creates a commit, a p99 of 36 ms). With
// a flush 1 ms slower, both fill their batches. A first version of this
// policy also closed a batch when no Create had come for four times the
// usual gap between two: on one core the callers' gaps are the other
// callers' work (answering, parsing), so it closed batches at half their
// callers, and batches alternated between halves. The figures and how to reproduce them are
// in docs/storage.md, under "Group commit".
type pacer struct {
	target int // Creates expected in the batch; 1..maxBatch
	lanes  int // batches the callers are split into: 1, or 2 while the flusher flushes beside

	// The Creates that came while the batch lingered, and when the first
	// came: the gaps between them are the callers' work, not waits.
	arrivals int
	first    time.Time
}

// arrive is told that a Create came while the batch lingered.
func (p *pacer) arrive() {
	if p.arrivals == 0 {
		p.first = time.Now()
	}
	p.arrivals++
}

// maxLinger bounds how long a batch stays open for more Creates. Counted
// from the first Create's call instead, it left PostgreSQL's batches at
// 128 callers at 101 Creates where they had held 117: their first Creates
// had waited out most of it during the last commit.
const maxLinger = 2 * time.Millisecond

// newPacer returns a pacer that expects a lone caller.
func newPacer() pacer { return pacer{target: 1, lanes: 1} }

// open is told that a batch opens with waiting Creates, after a batch of
// last Creates (0 for the first batch): those waiting came while the last
// committed, so there are at least last+waiting callers.
func (p *pacer) open(last, waiting int) {
	p.arrivals = 0
	p.target = max(p.target, min(last+waiting, maxBatch))
}

// full reports whether a batch of n Creates needs no more wait.
func (p *pacer) full(n int) bool { return n >= p.size() }

// size returns the Creates a batch is to hold: its share of the target.
func (p *pacer) size() int { return (min(p.target, maxBatch) + p.lanes - 1) / p.lanes }

// closed is told that a batch of n Creates was closed, full or not.
func (p *pacer) closed(n int, full bool) {
	if !full {
		p.target = max(n, 1)
	}
}

// commitLoop is the committer: it takes every waiting Create, waits for
// more as the pacer says, stores them in one transaction, answers each,
// and repeats.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	if s.fl != nil {
		go s.fl.run(s.cfg.hooks.Committed)
		defer s.fl.close()
	}
	batch := make([]*createReq, 0, maxBatch)
	p := newPacer()
	// carry holds the Creates taken beyond a batch's size, for the next.
	carry := make([]*createReq, 0, maxBatch)
	t := time.NewTimer(time.Hour)
	t.Stop()
	last := 0
	for {
		batch = append(batch, carry...)
		clear(carry)
		carry = carry[:0]
		batch = s.fill(batch)
		waiting := len(batch)
		if waiting == 0 {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			case <-s.closed:
				return
			}
			batch = s.fill(batch)
		}
		if p.lanes > 1 {
			// The last batch's callers may be back among those waiting;
			// those whose flush is still to come are not.
			last = s.fl.unanswered()
		}
		p.open(last, waiting)
		split, beside := false, false
		if s.fl != nil {
			split, beside = s.fl.split(p.target)
		}
		p.lanes = 1
		if split {
			p.lanes = 2
		}
		// Lingering must not leave a Create with less than the quarter
		// of its time that commitBatch requires.
		until := time.Now().Add(maxLinger)
		for _, r := range batch {
			if u := r.deadline.Add(-s.cfg.timeout / 4); u.Before(until) {
				until = u
			}
		}
		var full bool
		batch, full = s.linger(batch, &p, until, t)
		if s.fl != nil && full && p.arrivals > 1 {
			s.fl.arrived(time.Since(p.first), p.arrivals-1)
		}
		if k := p.size(); p.lanes > 1 && len(batch) > k {
			carry = append(carry, batch[k:]...)
			clear(batch[k:])
			batch = batch[:k]
		}
		s.commitBatch(batch, beside)
		n := len(batch)
		if s.fl != nil {
			// Those of the batch, if it committed, and of any before it
			// whose flush is still to come.
			n = max(n, s.fl.unanswered())
		}
		p.closed(n, full)
		last = len(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// linger adds Creates to batch until the pacer finds it full, until
// until, or until the Store closes, and reports whether the batch ended
// full. t is a stopped timer it may use, and leaves stopped.
func (s *Store) linger(batch []*createReq, p *pacer, until time.Time, t *time.Timer) ([]*createReq, bool) {
	if p.full(len(batch)) {
		return s.probe(batch, p), true
	}
	d := time.Until(until)
	if d <= 0 {
		return batch, false
	}
	t.Reset(d)
	defer t.Stop()
	for !p.full(len(batch)) {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
			p.arrive()
		case <-t.C:
			return batch, false
		case <-s.closed:
			return batch, false
		}
	}
	return s.probe(batch, p), true
}

// probe lets the goroutines that are ready to run do so once, and adds to
// the full batch the Creates they make: callers the target did not
// count. Only Creates that came while a batch committed raise the target
// otherwise, and where the committer shares a core with its callers and
// the flush costs little, few come then: the target would stay wherever
// it started. It costs a yield, and no timer.
func (s *Store) probe(batch []*createReq, p *pacer) []*createReq {
	if p.lanes > 1 {
		return batch
	}
	runtime.Gosched()
	return s.fill(batch)
}

// fill adds to batch every Create waiting, up to maxBatch in all.
func (s *Store) fill(batch []*createReq) []*createReq {
	for len(batch) < maxBatch {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}
