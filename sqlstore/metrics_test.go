package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore"
)

// gathered returns the value of every counter, and the sample count and sum
// of every histogram (as name_count and name_sum), that reg holds, keyed by
// the series' name and sorted labels.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+`="`+lp.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := func(suffix string) string { return mf.GetName() + suffix + "{" + strings.Join(labels, ",") + "}" }
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[key("")] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[key("_count")] = float64(m.GetHistogram().GetSampleCount())
				got[key("_sum")] = m.GetHistogram().GetSampleSum()
			default:
				t.Errorf("%s: unexpected type %v", mf.GetName(), mf.GetType())
			}
		}
	}
	return got
}

// durationCounts keeps only the operation duration histograms' counts, as
// a map from operation to count.
func durationCounts(series map[string]float64) map[string]float64 {
	counts := map[string]float64{}
	for k, v := range series {
		if op, ok := strings.CutPrefix(k, `plantstore_storage_operation_duration_seconds_count{operation="`); ok {
			counts[strings.TrimSuffix(op, `"}`)] = v
		}
	}
	return counts
}

// failures keeps only the error counters that are not zero.
func failures(series map[string]float64) map[string]float64 {
	got := map[string]float64{}
	for k, v := range series {
		if strings.HasPrefix(k, "plantstore_storage_errors_total{") && v != 0 {
			got[k] = v
		}
	}
	return got
}

func TestMetrics(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			reg := prometheus.NewRegistry()
			s := openStore(t, db, be.dialect, WithOutbox(), WithMetrics(reg))
			ctx := context.Background()

			// Before any operation every operation's series is there, at zero.
			want := map[string]float64{}
			for _, op := range opLabels {
				want[op] = 0
			}
			if diff := cmp.Diff(want, durationCounts(gathered(t, reg))); diff != "" {
				t.Errorf("operations counted before any (-want +got):\n%s", diff)
			}

			mustBe := func(what string, err, wantErr error) {
				t.Helper()
				if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
					t.Fatalf("%s = %v, want %v", what, err, wantErr)
				}
			}
			mustBe("Create", s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}), nil)
			mustBe("Create again", s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}), plantstore.ErrConflict)
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			mustBe("Create with a canceled context", s.Create(canceled, plantstore.Plant{ID: 2, Name: "Aloe"}), context.Canceled)
			_, err := s.Plant(ctx, 1)
			mustBe("Plant", err, nil)
			_, err = s.Plant(ctx, 2)
			mustBe("Plant of a missing id", err, plantstore.ErrNotFound)
			_, err = s.List(ctx, 0, 10)
			mustBe("List", err, nil)
			_, err = s.FanOut(ctx, []string{"sub"}, 10)
			mustBe("FanOut", err, nil)
			deliveries, err := s.Claim(ctx, "sub", "me", time.Now().Add(time.Minute), 10)
			mustBe("Claim", err, nil)
			if len(deliveries) != 1 {
				t.Fatalf("Claim = %v, want one delivery", deliveries)
			}
			mustBe("Ack", s.Ack(ctx, "sub", []int64{deliveries[0].Seq}), nil)
			mustBe("Delete", s.Delete(ctx, 1), nil)
			mustBe("Delete again", s.Delete(ctx, 1), plantstore.ErrNotFound)
			mustBe("ProbeWrite", s.ProbeWrite(ctx), nil)
			mustBe("Ping", s.Ping(ctx), nil)
			// A failure that is neither the database's absence nor the
			// caller's: the table is gone.
			if _, err := db.Exec(`DROP TABLE plants`); err != nil {
				t.Fatal(err)
			}
			_, err = s.Plant(ctx, 1)
			if err == nil || errors.Is(err, plantstore.ErrUnavailable) || errors.Is(err, plantstore.ErrNotFound) {
				t.Fatalf("Plant without a table = %v, want another failure", err)
			}
			db.Close()
			mustBe("Create on a closed database", s.Create(ctx, plantstore.Plant{ID: 3, Name: "Ivy"}), plantstore.ErrUnavailable)
			mustBe("Ping on a closed database", s.Ping(ctx), plantstore.ErrUnavailable)

			series := gathered(t, reg)
			wantCounts := map[string]float64{
				"create": 4, "read": 3, "list": 1, "delete": 2, "ping": 2, "claim_events": 1, "ack_events": 1, "probe_write": 1,
			}
			if diff := cmp.Diff(wantCounts, durationCounts(series)); diff != "" {
				t.Errorf("operations timed (-want +got):\n%s", diff)
			}
			wantFailures := map[string]float64{
				`plantstore_storage_errors_total{kind="canceled",operation="create"}`:    1,
				`plantstore_storage_errors_total{kind="unavailable",operation="create"}`: 1,
				`plantstore_storage_errors_total{kind="unavailable",operation="ping"}`:   1,
				`plantstore_storage_errors_total{kind="other",operation="read"}`:         1,
			}
			if diff := cmp.Diff(wantFailures, failures(series)); diff != "" {
				t.Errorf("failures counted (-want +got):\n%s", diff)
			}
			// The canceled Create never reached the committer; the three
			// others were each a batch of one.
			wantBatches := map[string]float64{
				"plantstore_storage_group_commit_batch_size_count{}": 3,
				"plantstore_storage_group_commit_batch_size_sum{}":   3,
			}
			gotBatches := map[string]float64{}
			for k, v := range series {
				if strings.HasPrefix(k, "plantstore_storage_group_commit_batch_size") {
					gotBatches[k] = v
				}
			}
			if diff := cmp.Diff(wantBatches, gotBatches); diff != "" {
				t.Errorf("batches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsBatchSizes creates plants from many goroutines at once: the
// batch sizes add up to the number of Creates, whatever the batching.
func TestMetricsBatchSizes(t *testing.T) {
	db, _ := sqliteBackend.newDB(t)
	reg := prometheus.NewRegistry()
	s := openStore(t, db, SQLite, WithMetrics(reg))
	const creates = 64
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() {
			if err := s.Create(context.Background(), plantstore.Plant{ID: int64(i), Name: "x"}); err != nil {
				t.Errorf("Create(%d) = %v", i, err)
			}
		})
	}
	wg.Wait()
	series := gathered(t, reg)
	if n, sum := series["plantstore_storage_group_commit_batch_size_count{}"], series["plantstore_storage_group_commit_batch_size_sum{}"]; sum != creates || n < 1 || n > creates {
		t.Errorf("%v batches of %v Creates in all, want %d Creates in 1 to %d batches", n, sum, creates, creates)
	}
}

// TestMetricsWithoutGroupCommitOrOutbox shows that a Store exports no batch
// sizes when it does not batch, and no outbox operations when it has none.
func TestMetricsWithoutGroupCommitOrOutbox(t *testing.T) {
	db, _ := sqliteBackend.newDB(t)
	reg := prometheus.NewRegistry()
	s := openStore(t, db, SQLite, WithoutGroupCommit(), WithMetrics(reg))
	if err := s.Create(context.Background(), plantstore.Plant{ID: 1, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	for k := range gathered(t, reg) {
		if strings.Contains(k, "batch") || strings.Contains(k, "event") {
			t.Errorf("unexpected series %s", k)
		}
	}
	want := map[string]float64{"create": 1, "read": 0, "list": 0, "delete": 0, "ping": 0, "probe_write": 0}
	if diff := cmp.Diff(want, durationCounts(gathered(t, reg))); diff != "" {
		t.Errorf("operations timed (-want +got):\n%s", diff)
	}
}

// TestMetricsSharedRegistry opens two Stores with one registry: the second
// shares the first's collectors, and a conflicting collector fails Open.
func TestMetricsSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for i := range 2 {
		db, _ := sqliteBackend.newDB(t)
		s := openStore(t, db, SQLite, WithMetrics(reg))
		if err := s.Ping(context.Background()); err != nil {
			t.Fatalf("Ping %d: %v", i, err)
		}
	}
	if got := durationCounts(gathered(t, reg))["ping"]; got != 2 {
		t.Errorf("pings timed = %v, want 2", got)
	}

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "plantstore_storage_errors_total", Help: "another"}))
	db, _ := sqliteBackend.newDB(t)
	if s, err := Open(context.Background(), db, SQLite, WithMetrics(other)); err == nil {
		s.Close()
		t.Error("Open with a conflicting registry = nil error")
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, -1},
		{"conflict", fmt.Errorf("sqlstore: x: %w", plantstore.ErrConflict), -1},
		{"not found", plantstore.ErrNotFound, -1},
		{"unavailable", failure(context.Background(), "x", errors.New("connection reset")), kindUnavailable},
		{"driver timeout", failure(context.Background(), "x", context.DeadlineExceeded), kindUnavailable},
		{"outcome unknown", fmt.Errorf("sqlstore: commit: %w: %w", plantstore.ErrOutcomeUnknown, plantstore.ErrUnavailable), kindOutcomeUnknown},
		{"caller canceled", failure(canceledContext(), "x", errors.New("connection reset")), kindCanceled},
		{"caller deadline", fmt.Errorf("sqlstore: x: %w", context.DeadlineExceeded), kindCanceled},
		{"other", fmt.Errorf("sqlstore: x: %w", errors.New("syntax error")), kindOther},
	}
	for _, tt := range tests {
		if got := kindOf(tt.err); got != tt.want {
			t.Errorf("%s: kindOf(%v) = %d, want %d", tt.name, tt.err, got, tt.want)
		}
	}
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
