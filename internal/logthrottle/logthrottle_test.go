package logthrottle_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/logthrottle"
	"github.com/plantstore/plantstore/internal/testkit"
)

// recorder keeps the records handed to it.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// lines returns, for each record, its message and its "repeated" count
// (0 for a line passed at once).
func (r *recorder) lines() []line {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ls []line
	for _, rec := range r.recs {
		l := line{Msg: rec.Message}
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "repeated":
				l.Repeated = int(a.Value.Int64())
			case "i":
				l.I = int(a.Value.Int64())
			}
			return true
		})
		ls = append(ls, l)
	}
	return ls
}

type line struct {
	Msg      string
	I        int // the "i" attribute: which record of the burst
	Repeated int
}

func TestBurstIsOneLine(t *testing.T) {
	rec := &recorder{}
	l := slog.New(logthrottle.New(rec, time.Hour))
	for i := range 1000 {
		l.Warn("storage unavailable", "i", i)
		l.Warn("outcome unknown", "i", i)
	}
	l.Error("storage unavailable", "i", 0) // another level is another kind
	want := []line{{Msg: "storage unavailable"}, {Msg: "outcome unknown"}, {Msg: "storage unavailable"}}
	if diff := cmp.Diff(want, rec.lines()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestSummaryCountsEveryRecord(t *testing.T) {
	rec := &recorder{}
	l := slog.New(logthrottle.New(rec, 10*time.Millisecond))
	const n = 100
	for i := range n {
		l.Warn("storage unavailable", "i", i)
	}
	// Once the burst ends, its summary comes from a timer: wait for the
	// count of lines passed and records summarised to reach n.
	var got []line
	testkit.WaitUntil(t, 10*time.Second, fmt.Sprintf("lines accounting for %d records", n), func() bool {
		got = rec.lines()
		total := 0
		for _, g := range got {
			total += max(g.Repeated, 1)
		}
		if total > n {
			t.Fatalf("lines account for %d records, want %d: %+v", total, n, got)
		}
		return total == n
	})
	if got[0] != (line{Msg: "storage unavailable"}) {
		t.Errorf("first line = %+v, want the first record as it is", got[0])
	}
	// A summary carries the attributes of the last record it counts.
	if last := got[len(got)-1]; last.Repeated == 0 || last.I != n-1 {
		t.Errorf("last line = %+v, want a summary ending with record %d", last, n-1)
	}
}
