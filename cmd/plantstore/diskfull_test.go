package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestStartOnAFullDisk restarts the binary on a SQLite file whose
// filesystem has filled up while it was stopped: it exits at once with
// status 3 and a line that says the directory is full and how much is
// free, instead of failing on "disk I/O error" at every restart; once
// space is freed it starts and serves the plants it had.
func TestStartOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := dirtest.Tmpfs(t, 2<<20)
	db := filepath.Join(dir, "plants.db")
	p := startProcess(t, "-db", db, "-log-level", "warn")
	if status, _, err := create(p.URL, 1, "before"); err != nil || status != 200 {
		t.Fatalf("create = %d, %v", status, err)
	}
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	filler := dirtest.Fill(t, dir)
	_, stderr, err := testkit.Run(t, binary(t), testkit.Env("PLANTSTORE_TOKENS="+procToken), "-addr", "127.0.0.1:0", "-db", db)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("start on a full disk = %v, want exit status 3\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "database directory "+dir+" is full: ") || !strings.Contains(stderr, "bytes free") {
		t.Errorf("the start on a full disk does not say so:\n%q", stderr)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	q := startProcess(t, "-db", db, "-log-level", "warn")
	if got := listAll(t, q.URL); got[1] != "before" {
		t.Errorf("after freeing space the plants are %v, want plant 1", got)
	}
}
