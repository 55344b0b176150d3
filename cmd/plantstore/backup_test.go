package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
)

// TestBackupWhileWriting backs up the binary's SQLite file with
// `plantstore backup` while about 1,000 creates a second go on, restores
// the copy with `plantstore restore` into a new place, and serves it from
// a fresh process: every create acknowledged before the backup began is
// there, and the copy passes SQLite's integrity check.
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "plants.db")
	p := startProcess(t, "-db", db, "-log-level", "warn")

	var (
		mu      sync.Mutex
		ackedAt = map[int64]time.Time{}
		next    atomic.Int64
		wg      sync.WaitGroup
		done    = make(chan struct{})
	)
	const workers = 10 // each paced at 100 creates a second
	for range workers {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				id := next.Add(1)
				if status, _, err := create(p.URL, id, fmt.Sprint("plant-", id)); err == nil && status == 200 {
					mu.Lock()
					ackedAt[id] = time.Now()
					mu.Unlock()
				}
			}
		})
	}
	acked := func() int { mu.Lock(); defer mu.Unlock(); return len(ackedAt) }
	testkit.WaitUntil(t, time.Minute, "150 creates acknowledged before the backup", func() bool { return acked() >= 150 })
	snap := filepath.Join(dir, "snap.db")
	began := time.Now()
	stdout, stderr, err := testkit.Run(t, binary(t), testkit.Env(), "backup", "-db", db, "-out", snap)
	took := time.Since(began)
	if err != nil {
		t.Fatalf("plantstore backup: %v\n%s%s", err, stdout, stderr)
	}
	afterBackup := acked()
	testkit.WaitUntil(t, time.Minute, "50 creates acknowledged after the backup", func() bool { return acked() >= afterBackup+50 })
	close(done)
	wg.Wait()

	if err := sqlstore.CheckSQLiteFile(t.Context(), "sqlite", snap); err != nil {
		t.Errorf("the backup: %v", err)
	}
	restored := filepath.Join(dir, "restored", "plants.db")
	if err := os.Mkdir(filepath.Dir(restored), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := testkit.Run(t, binary(t), testkit.Env(), "restore", "-from", snap, "-db", restored); err != nil {
		t.Fatalf("plantstore restore: %v\n%s", err, stderr)
	}
	q := startProcess(t, "-db", restored, "-log-level", "warn")
	got := listAll(t, q.URL)
	before, missing := 0, 0
	mu.Lock()
	for id, at := range ackedAt {
		if at.Before(began) {
			before++
			if got[id] != fmt.Sprint("plant-", id) {
				missing++
			}
		}
	}
	total := len(ackedAt)
	mu.Unlock()
	t.Logf("%d creates acknowledged, %d of them before the backup began (it took %v); the restored copy holds %d plants, %d of those missing",
		total, before, took.Round(time.Millisecond), len(got), missing)
	if before == 0 || missing > 0 {
		t.Errorf("%d of the %d creates acknowledged before the backup are missing from the restored copy", missing, before)
	}
	if len(got) > total {
		t.Errorf("the restored copy holds %d plants, more than the %d ever acknowledged", len(got), total)
	}
}

// TestBackupRestoreRefuse checks what backup and restore refuse, leaving
// every file as it was: an existing -out, a backup that is not whole,
// PostgreSQL, and missing flags. A -db restore would overwrite and a
// backup that is not plantstore's are sqlstore's
// TestBackupAndRestoreSQLiteFile.
func TestBackupRestoreRefuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "plants.db")
	writePlantstoreDB(t, db)
	snap := filepath.Join(dir, "snap.db")
	var stderr testkit.Buffer
	if err := run(t.Context(), []string{"backup", "-db", db, "-out", snap}, func(string) string { return "" }, io.Discard, &stderr); err != nil {
		t.Fatalf("plantstore backup: %v\n%s", err, &stderr)
	}
	truncated := filepath.Join(dir, "truncated.db")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr error  // checked in process
		want    string // in the binary's stderr
	}{
		{name: "out exists", args: []string{"backup", "-db", db, "-out", snap}, wantErr: fs.ErrExist, want: "already exists"},
		{name: "restore a truncated copy", args: []string{"restore", "-from", truncated, "-db", filepath.Join(dir, "new2.db")},
			want: "restore:"},
		{name: "postgres", args: []string{"backup", "-db", "postgres://db/plants", "-out", filepath.Join(dir, "x.db")},
			wantErr: errNotSQLite, want: "pg_dump"},
		{name: "no -out", args: []string{"backup", "-db", db}, wantErr: errBadArgs, want: "-out is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr testkit.Buffer
			err := run(t.Context(), tt.args, func(string) string { return "" }, &stdout, &stderr)
			if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("run %v = %v, want %v", tt.args, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run %v = %v, want it to say %q", tt.args, err, tt.want)
			}
		})
	}
	for _, f := range []string{filepath.Join(dir, "new2.db"), filepath.Join(dir, "x.db")} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was left behind (%v)", f, err)
		}
	}
}
