//go:build unix

package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

func TestPrepareSQLiteFileRefusesANamedPipe(t *testing.T) {
	t.Parallel()
	// Reading a pipe's first bytes would wait for a writer for ever.
	path := filepath.Join(t.TempDir(), "plants.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := PrepareSQLiteFile(context.Background(), "sqlite", path); !errors.Is(err, ErrNotPlantstore) {
		t.Errorf("PrepareSQLiteFile of a named pipe = %v, want ErrNotPlantstore", err)
	}
}
