package testkit

import (
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"
)

// PostgresDatabase creates a database of its own on the server at
// $PLANTSTORE_TEST_POSTGRES_DSN, drops it when the test ends, and returns
// its URL: unlike a schema, it holds whatever a connection pooler's
// session sees. It skips the test when the variable is unset. The caller
// links the pgx driver.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("PLANTSTORE_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("SKIPPING: PLANTSTORE_TEST_POSTGRES_DSN is not set; this test needs a real PostgreSQL server (see README)")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := "plantstore_test_" + strings.ToLower(rand.Text()[:12])
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		admin.Close()
		t.Fatalf("PostgreSQL at PLANTSTORE_TEST_POSTGRES_DSN: create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// WriteFile writes data to name, readable by its owner only.
func WriteFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
