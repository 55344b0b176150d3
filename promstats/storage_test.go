package promstats_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/sqlstore"
)

// newStorage returns Storage's hooks over reg.
func newStorage(t *testing.T, reg prometheus.Registerer) sqlstore.Hooks {
	t.Helper()
	h, err := promstats.Storage(reg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestStorage tells the hooks of two creates, one canceled, and their
// batch, and checks the series they make; then that the hooks of a second
// Store with the same registry add up into them, and that a conflicting
// collector fails Storage. Which operations and outcomes a Store tells its
// hooks of is sqlstore's TestHooks.
func TestStorage(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newStorage(t, reg)
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
	if diff := cmp.Diff(want, series(t, reg, "plantstore_storage_")); diff != "" {
		t.Errorf("series before any operation (-want +got):\n%s", diff)
	}

	h.Done(sqlstore.OpCreate, time.Millisecond, sqlstore.OK)
	h.Done(sqlstore.OpCreate, time.Millisecond, sqlstore.Canceled)
	h.Committed(1, time.Millisecond)
	// An Op or an Outcome of a later sqlstore: the time is kept when the
	// operation is known, and nothing panics.
	h.Done(sqlstore.OpRead, time.Millisecond, sqlstore.Outcome(200))
	h.Done(sqlstore.Op(200), time.Millisecond, sqlstore.Failed)
	for k, v := range map[string]float64{
		`plantstore_storage_operation_duration_seconds_count{operation="create"}`: 2,
		`plantstore_storage_errors_total{kind="canceled",operation="create"}`:     1,
		`plantstore_storage_operation_duration_seconds_count{operation="read"}`:   1,
		"plantstore_storage_group_commit_batch_size_count{}":                      1,
		"plantstore_storage_group_commit_duration_seconds_count{}":                1,
	} {
		want[k] = v
	}
	if diff := cmp.Diff(want, series(t, reg, "plantstore_storage_")); diff != "" {
		t.Errorf("series after two creates (-want +got):\n%s", diff)
	}

	newStorage(t, reg).Done(sqlstore.OpPing, time.Millisecond, sqlstore.OK)
	h.Done(sqlstore.OpPing, time.Millisecond, sqlstore.OK)
	want[`plantstore_storage_operation_duration_seconds_count{operation="ping"}`] = 2
	if diff := cmp.Diff(want, series(t, reg, "plantstore_storage_")); diff != "" {
		t.Errorf("series after a ping of each Store (-want +got):\n%s", diff)
	}
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "plantstore_storage_errors_total", Help: "another"}))
	if _, err := promstats.Storage(other); err == nil || !strings.Contains(err.Error(), "promstats") {
		t.Errorf("Storage with a conflicting registry = %v, want an error", err)
	}
}
