package promstats_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/sqlstore"
)

// openStore opens a Store on a new SQLite file with Storage's hooks over
// reg, and the outbox.
func openStore(t *testing.T, reg prometheus.Registerer) *sqlstore.Store {
	t.Helper()
	hooks, err := promstats.Storage(reg)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(filepath.Join(t.TempDir(), "plants.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := sqlstore.Open(context.Background(), db, sqlstore.SQLite, sqlstore.WithOutbox(), sqlstore.WithHooks(hooks))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStorage(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openStore(t, reg)
	got := series(t, reg, "plantstore_storage_")
	want := map[string]float64{
		"plantstore_storage_group_commit_batch_size_count{}":       0,
		"plantstore_storage_group_commit_duration_seconds_count{}": 0,
	}
	for _, op := range sqlstore.Ops() {
		want[`plantstore_storage_operation_duration_seconds_count{operation="`+op.String()+`"}`] = 0
		for _, k := range []string{"unavailable", "outcome_unknown", "canceled", "other"} {
			want[`plantstore_storage_errors_total{kind="`+k+`",operation="`+op.String()+`"}`] = 0
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series before any operation (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	s.Create(canceled, plantstore.Plant{ID: 2, Name: "Aloe"})
	for k, v := range map[string]float64{
		`plantstore_storage_operation_duration_seconds_count{operation="create"}`: 2,
		`plantstore_storage_errors_total{kind="canceled",operation="create"}`:     1,
		"plantstore_storage_group_commit_batch_size_count{}":                      1,
		"plantstore_storage_group_commit_duration_seconds_count{}":                1,
	} {
		want[k] = v
	}
	// The batch is counted once its creates have been answered.
	testkit.WaitUntil(t, 10*time.Second, "the batch counted", func() bool {
		return series(t, reg, "plantstore_storage_")["plantstore_storage_group_commit_batch_size_count{}"] == 1
	})
	if diff := cmp.Diff(want, series(t, reg, "plantstore_storage_")); diff != "" {
		t.Errorf("series after two creates (-want +got):\n%s", diff)
	}
}

// TestStorageSharedRegistry opens two Stores with hooks of one registry:
// their counts add up, and a conflicting collector fails Storage.
func TestStorageSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if err := openStore(t, reg).Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	key := `plantstore_storage_operation_duration_seconds_count{operation="ping"}`
	if got := series(t, reg, "plantstore_storage_")[key]; got != 2 {
		t.Errorf("%s = %v, want 2", key, got)
	}
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "plantstore_storage_errors_total", Help: "another"}))
	if _, err := promstats.Storage(other); err == nil || !strings.Contains(err.Error(), "promstats") {
		t.Errorf("Storage with a conflicting registry = %v, want an error", err)
	}
}
