package sqlstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/plantstore/plantstore"
)

// TestBackupAndRestoreSQLiteFile backs a database file up and restores
// the copy as a new database that lists the same plants, and checks what
// each refuses, leaving no file behind.
func TestBackupAndRestoreSQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plants.db")
	s := openSQLiteStore(t, path)
	for id := range int64(10) {
		if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(dir, "snap.db")
	if err := BackupSQLiteFile(ctx, "sqlite", path, snap); err != nil {
		t.Fatalf("BackupSQLiteFile = %v", err)
	}
	restored := filepath.Join(dir, "restored.db")
	if err := RestoreSQLiteFile(ctx, "sqlite", snap, restored); err != nil {
		t.Fatalf("RestoreSQLiteFile = %v", err)
	}
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the restored file: %v, mode %v; want mode 0600", err, fi.Mode())
	}
	if got, err := openSQLiteStore(t, restored).List(ctx, 0, 100); err != nil || len(got) != 10 {
		t.Errorf("the restored database lists %d plants (%v), want 10", len(got), err)
	}

	foreign := filepath.Join(dir, "foreign.db")
	if err := os.WriteFile(foreign, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
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
