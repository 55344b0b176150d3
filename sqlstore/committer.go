package sqlstore

import "time"

// The group commit's policy: when the committer stops waiting for more
// Creates and commits the batch it holds.
//
// A batch opens with every Create waiting. The committer then waits for
// more while they keep coming: it commits as soon as the batch holds as
// many Creates as it expects callers (the target), or when no Create has
// come for a few times the usual gap between two (the idle wait), or when
// the batch has been open for maxLinger, or when waiting longer would
// leave a Create with less than the quarter of its timeout that
// commitBatch requires. The target follows the callers: it rises to the
// size of the last batch plus the Creates that came while it committed
// (callers the last batch did not hold), and falls to the size of a batch
// that the idle wait or a bound closed (the callers that came). So a
// fixed set of callers, such as an HTTP server's connections, is
// committed in full batches, each closed the moment its last caller comes
// back; a lone caller never waits; callers that leave cost one idle wait.
//
// Measured on 2 cores, the binary pinned to one, wrk -t1 -c32 on the
// other, SQLite with a 45 µs fdatasync (scripts/groupcommit-sweep.sh and
// BenchmarkGroupCommitSweep; see docs/storage.md#group-commit for the
// tables), the committer it replaces waited for the last batch's size
// plus those waiting but no longer than twice the last commit's time:
// 130 µs commits left it 260 µs, less than 32 callers sharing the core
// need to come back, so batches closed short, the short batches made the
// next target short, and it settled at 2 Creates per commit. Bounding the
// wait by the callers' own pace (the gaps between their arrivals) instead
// of the commit's time is what lets the batch follow them on a fast disk,
// and changes nothing on a slow one, where the callers are all back
// before the commit ends.
type pacer struct {
	target int // Creates expected in the batch; 1..maxBatch
}

// maxLinger bounds how long a batch stays open for more Creates.
const maxLinger = 2 * time.Millisecond

// newPacer returns a pacer that expects a lone caller.
func newPacer() pacer { return pacer{target: 1} }

// open is told that a batch opens with waiting Creates, after a batch of
// last Creates (0 for the first batch): those waiting came while the last
// committed, so there are at least last+waiting callers.
func (p *pacer) open(last, waiting int) {
	p.target = max(p.target, min(last+waiting, maxBatch))
}

// full reports whether a batch of n Creates needs no more wait.
func (p *pacer) full(n int) bool { return n >= min(p.target, maxBatch) }

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
	batch := make([]*createReq, 0, maxBatch)
	p := newPacer()
	t := time.NewTimer(time.Hour)
	t.Stop()
	last := 0
	for {
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
		p.open(last, waiting)
		// Lingering must not leave a Create with less than the quarter
		// of its time that commitBatch requires.
		until := batch[0].arrived.Add(maxLinger)
		for _, r := range batch {
			if u := r.deadline.Add(-s.cfg.timeout / 4); u.Before(until) {
				until = u
			}
		}
		var full bool
		batch, full = s.linger(batch, &p, until, t)
		start := time.Now()
		s.commitBatch(batch)
		took := time.Since(start)
		if s.cfg.hooks.Committed != nil {
			s.cfg.hooks.Committed(len(batch), took)
		}
		p.closed(len(batch), full)
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
		return batch, true
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
		case <-t.C:
			return batch, false
		case <-s.closed:
			return batch, false
		}
	}
	return batch, true
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
