package sqlstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// wantCopy checks that the database copied to path has mode 0600 and
// lists n plants.
func wantCopy(t *testing.T, path string, n int) {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; want mode 0600", path, err, fi.Mode())
	}
	if got, err := openSQLite(t, path).List(context.Background(), 0, n+1); err != nil || len(got) != n {
		t.Errorf("%s lists %d plants (%v), want %d", path, len(got), err, n)
	}
}

// TestBackupSQLite backs a Store's database up to one dst from several
// goroutines at once: exactly one backup succeeds, and the others, and one
// started after it, fail with an error wrapping fs.ErrExist, so that none
// silently replaces the copy of another; the copy has mode 0600, lists
// every plant, and no file is left beside it.
func TestBackupSQLite(t *testing.T) {
	t.Parallel()
	s := sqliteBackend.open(t, WithOutbox())
	db, ctx := s.db, context.Background()
	for id := range int64(200) {
		mustCreate(t, s, "p", id)
	}
	const n = 6
	for round := range 3 {
		dst := filepath.Join(t.TempDir(), "copy.db")
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				errs <- BackupSQLite(ctx, "sqlite", db, dst)
			}()
		}
		close(start)
		ok := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				ok++
			case !errors.Is(err, fs.ErrExist):
				t.Errorf("round %d: BackupSQLite = %v, want nil or fs.ErrExist", round, err)
			}
		}
		if ok != 1 {
			t.Errorf("round %d: %d of %d backups to one file succeeded, want 1", round, ok, n)
		}
		if err := BackupSQLite(ctx, "sqlite", db, dst); !errors.Is(err, fs.ErrExist) {
			t.Errorf("round %d: BackupSQLite over an existing file = %v, want fs.ErrExist", round, err)
		}
		entries, _ := os.ReadDir(filepath.Dir(dst))
		for _, e := range entries {
			if e.Name() != "copy.db" {
				t.Errorf("round %d: %s left beside the copy", round, e.Name())
			}
		}
		wantCopy(t, dst, 200)
	}
}

// TestBackupAndRestoreSQLiteFile backs a database file up and restores
// the copy as a new database that lists the same plants, and checks what
// each refuses, leaving no file behind.
func TestBackupAndRestoreSQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plants.db")
	s := openSQLite(t, path)
	for id := range int64(10) {
		mustCreate(t, s, "p", id)
	}
	snap := filepath.Join(dir, "snap.db")
	if err := BackupSQLiteFile(ctx, "sqlite", path, snap); err != nil {
		t.Fatalf("BackupSQLiteFile = %v", err)
	}
	restored := filepath.Join(dir, "restored.db")
	if err := RestoreSQLiteFile(ctx, "sqlite", snap, restored); err != nil {
		t.Fatalf("RestoreSQLiteFile = %v", err)
	}
	wantCopy(t, restored, 10)

	foreign := filepath.Join(dir, "foreign.db")
	testkit.WriteFile(t, foreign, "not a database")
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"backup of a missing file", BackupSQLiteFile(ctx, "sqlite", filepath.Join(dir, "none.db"), filepath.Join(dir, "x1.db")), fs.ErrNotExist},
		{"backup of a foreign file", BackupSQLiteFile(ctx, "sqlite", foreign, filepath.Join(dir, "x2.db")), ErrNotPlantstore},
		{"backup over a file", BackupSQLiteFile(ctx, "sqlite", path, snap), fs.ErrExist},
		{"restore over a database", RestoreSQLiteFile(ctx, "sqlite", snap, path), ErrDatabaseExists},
		{"restore of a foreign file", RestoreSQLiteFile(ctx, "sqlite", foreign, filepath.Join(dir, "x3.db")), ErrNotPlantstore},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	for _, f := range []string{"x1.db", "x2.db", "x3.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was left behind (%v)", f, err)
		}
	}
}
