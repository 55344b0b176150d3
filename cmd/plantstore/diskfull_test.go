package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestStartOnAFullDisk starts the binary on a SQLite file whose
// filesystem has filled up while it was stopped: it exits at once with
// status 3 and a line that says the directory is full and how much is
// free, instead of failing on "disk I/O error" at every restart. That the
// file opens, with its plants, once space is freed is sqlstore's
// TestOpenSQLiteOnAFullDisk.
func TestStartOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := dirtest.Tmpfs(t, 2<<20)
	db := filepath.Join(dir, "plants.db")
	writePlantstoreDB(t, db)
	dirtest.Fill(t, dir)
	_, stderr, err := testkit.Run(t, binary(t), testkit.Env("PLANTSTORE_TOKENS="+procToken), "-addr", "127.0.0.1:0", "-db", db)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("start on a full disk = %v, want exit status 3\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "database directory "+dir+" is full: ") || !strings.Contains(stderr, "bytes free") {
		t.Errorf("the start on a full disk does not say so:\n%q", stderr)
	}
}
