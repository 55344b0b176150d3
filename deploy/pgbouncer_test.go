package deploy_test

import (
	"database/sql"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// newPostgresDatabase returns the URL of a database of its own (see
// [testkit.PostgresDatabase]) and a connection to it.
func newPostgresDatabase(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := testkit.PostgresDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, db
}

// waitOutboxEmpty waits until no webhook event or delivery is left in the
// database: from then on no duplicate delivery can still arrive.
func waitOutboxEmpty(t *testing.T, db *sql.DB, limit time.Duration) {
	t.Helper()
	testkit.WaitUntil(t, limit, "the webhook outbox to empty", func() bool {
		var events, deliveries int
		err := db.QueryRow(`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)`).Scan(&events, &deliveries)
		if err != nil {
			t.Fatalf("read the outbox: %v", err)
		}
		return events == 0 && deliveries == 0
	})
}

// TestFleetThroughPgBouncer runs two plantstore instances with webhooks on
// one PostgreSQL database through PgBouncer 1.18 in transaction mode, with
// a plain URL, under 16 clients creating plants: every create must be
// acknowledged and stored, and delivered to the webhook receiver exactly
// once.
func TestFleetThroughPgBouncer(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "runs two instances under load through PgBouncer")
	start := time.Now()
	dsn, db := newPostgresDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = pgtest.PgBouncer(t, u.Host)
	recv := newHookReceiver(t)
	dir := t.TempDir()
	instances := startInstances(t, u.String(), recv, 2, dir)
	l := startLoad(t, urls(instances), loadOptions{workers: 16, patient: true})
	l.waitAcked(t, 3000, 2*time.Minute)
	l.halt()

	w := l.window(start, time.Now())
	ids := l.ackedIDs()
	if w.failed != 0 {
		t.Errorf("%d of %d creates not acknowledged: %s; the first: %q; the instances' logs say:\n%s",
			w.failed, w.answers, codeCounts(w.codes), l.odd(), errorLines(dir, len(instances)))
	}
	lost := checkStored(t, instances[1].URL, ids)
	recv.waitDelivered(t, ids, 2*time.Minute)
	waitOutboxEmpty(t, db, 2*time.Minute)
	dups, deliveries := recv.duplicates()
	if dups != 0 {
		t.Errorf("%d duplicate webhook deliveries, want 0", dups)
	}
	t.Logf("2 instances through PgBouncer (transaction mode, plain URL): %d creates answered, %d acknowledged, %d lost; %d webhook deliveries, %d duplicates, %d undelivered; %v",
		w.answers, len(ids), lost, deliveries, dups, len(recv.undelivered(ids)), time.Since(start).Round(100*time.Millisecond))
}
