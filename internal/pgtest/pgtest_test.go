package pgtest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// execSQL runs sql on c in one connection.
func execSQL(t *testing.T, c *Cluster, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.Addr(), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s on %s: %v", sql, c.Addr(), err)
	}
}

// values returns the column v of table kv in key order.
func values(t *testing.T, c *Cluster) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.Addr(), err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT v FROM kv ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRestartKeepsCommits(t *testing.T) {
	t.Parallel()
	c := Start(t)
	execSQL(t, c, "CREATE TABLE kv (k int PRIMARY KEY, v text NOT NULL)")
	execSQL(t, c, "INSERT INTO kv VALUES (1, 'one'), (2, 'two')")
	c.Restart(t)
	execSQL(t, c, "INSERT INTO kv VALUES (3, 'three')")
	c.Stop(t)
	if conn, err := pgx.Connect(context.Background(), c.DSN()); err == nil {
		conn.Close(context.Background())
		t.Fatal("connected to a stopped cluster")
	}
	c.Start(t)
	if diff := cmp.Diff([]string{"one", "two", "three"}, values(t, c)); diff != "" {
		t.Fatalf("rows after restarts (-want +got):\n%s", diff)
	}
}

func TestFailoverToSynchronousStandby(t *testing.T) {
	t.Parallel()
	primary := Start(t)
	execSQL(t, primary, "CREATE TABLE kv (k int PRIMARY KEY, v text NOT NULL)")
	standby := primary.StartStandby(t)
	execSQL(t, primary, "INSERT INTO kv VALUES (1, 'acknowledged by the standby')")

	// A standby is read-only until promoted.
	conn, err := pgx.Connect(context.Background(), standby.DSN())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), "INSERT INTO kv VALUES (2, 'x')")
	conn.Close(context.Background())
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" { // read_only_sql_transaction
		t.Fatalf("insert on the standby = %v, want SQLSTATE 25006", err)
	}

	primary.Stop(t)
	standby.Promote(t)
	execSQL(t, standby, "INSERT INTO kv VALUES (2, 'after promotion')")
	if diff := cmp.Diff([]string{"acknowledged by the standby", "after promotion"}, values(t, standby)); diff != "" {
		t.Fatalf("rows on the promoted standby (-want +got):\n%s", diff)
	}
}
