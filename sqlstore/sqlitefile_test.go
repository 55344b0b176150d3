package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// execSQLite runs stmts on the SQLite file at path through a connection
// with no pragmas, as another application would, and closes it.
func execSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// fileURI returns the SQLite URI of the file at path.
func fileURI(path string) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath()
}

// readApplicationID reads the application_id of the SQLite file at path.
func readApplicationID(t *testing.T, path string) uint32 {
	t.Helper()
	db := openDB(t, "sqlite", fileURI(path)+"?mode=ro")
	var id int64
	if err := db.QueryRow(`PRAGMA application_id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return uint32(id)
}

// oddDir makes a directory whose name needs escaping in a SQLite URI.
func oddDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "a dir?#%")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrepareSQLiteFileAcceptsPlantstoreFiles checks that PrepareSQLiteFile
// accepts a new file or plantstore's, in a directory whose name needs
// escaping in a SQLite URI, and that a Store opened with SQLiteDSN then
// writes to that file.
func TestPrepareSQLiteFileAcceptsPlantstoreFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(t *testing.T, path string)
		reason string
	}{
		{"missing file", func(*testing.T, string) {}, ""},
		{"empty file", func(t *testing.T, path string) { testkit.WriteFile(t, path, "") }, "SQLite takes an empty file for a new database"},
		{"database with no tables", func(t *testing.T, path string) {
			execSQLite(t, path, `PRAGMA user_version = 7`)
		}, "nothing in it to belong to another application"},
		{"plantstore database", func(t *testing.T, path string) {
			s := openSQLite(t, path)
			mustCreate(t, s, "kept", 1)
			s.Close()
		}, "closed, its tables in the file"},
		{"plantstore database written before the application ID", func(t *testing.T, path string) {
			db := openDB(t, "sqlite", SQLiteDSN(path))
			if err := migrate(context.Background(), db, SQLite, migrations[:2]); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO plants (id, name) VALUES (1, 'kept')`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if got := readApplicationID(t, path); got != 0 {
				t.Fatalf("application_id before = %#x, want 0", got)
			}
		}, "identified by its schema_version and plants tables"},
		{"plantstore database in use, its tables in the WAL", func(t *testing.T, path string) {
			// A Store still open leaves -wal and -shm beside the file,
			// and the tables in the WAL until a checkpoint.
			mustCreate(t, openSQLite(t, path), "kept", 1)
		}, "read through the WAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(oddDir(t), "plants.db")
			tt.setup(t, path)
			if err := PrepareSQLiteFile(context.Background(), "sqlite", path); err != nil {
				t.Fatalf("PrepareSQLiteFile = %v, want nil (%s)", err, tt.reason)
			}
			mustCreate(t, openSQLite(t, path), "new", 2)
			if got := readApplicationID(t, path); got != ApplicationID {
				t.Errorf("application_id after Open = %#x, want %#x", got, ApplicationID)
			}
		})
	}
}

// TestPrepareSQLiteFileRefuses checks that PrepareSQLiteFile, and
// OpenSQLite, which calls it before the DSN switches the file to WAL,
// refuse a file that is not plantstore's with a *notPlantstoreErr naming
// it, and a path they cannot use with an *fs.PathError, neither wrapping
// ErrUnavailable, and that they change no file.
func TestPrepareSQLiteFileRefuses(t *testing.T) {
	t.Parallel()
	// foreign returns a row's path func: it writes plants.db with write.
	foreign := func(write func(t *testing.T, path string)) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "plants.db")
			write(t, path)
			return path
		}
	}
	sqlite := func(stmts ...string) func(t *testing.T, dir string) string {
		return foreign(func(t *testing.T, path string) { execSQLite(t, path, stmts...) })
	}
	file := func(data string) func(t *testing.T, dir string) string {
		return foreign(func(t *testing.T, path string) { testkit.WriteFile(t, path, data) })
	}
	binary := make([]byte, 8192)
	rand.Read(binary)
	for _, tt := range []struct {
		name    string
		path    func(t *testing.T, dir string) string
		wantErr error
	}{
		{"SQLite with its own plants table", sqlite(`CREATE TABLE plants (id INTEGER PRIMARY KEY, species TEXT)`, `INSERT INTO plants VALUES (1, 'fern')`), ErrNotPlantstore},
		{"SQLite with customers", sqlite(`CREATE TABLE customers (a)`, `INSERT INTO customers VALUES (1)`), ErrNotPlantstore},
		{"SQLite with another application ID", sqlite(`PRAGMA application_id = 42`), ErrNotPlantstore},
		{"SQLite in WAL mode", sqlite(`PRAGMA journal_mode = WAL`, `CREATE TABLE customers (a)`), ErrNotPlantstore},
		{"text file", file("name,tag\nfern,green\n"), ErrNotPlantstore},
		{"binary file", file(string(binary)), ErrNotPlantstore},
		{"missing directory", func(_ *testing.T, dir string) string { return filepath.Join(dir, "missing", "plants.db") }, fs.ErrNotExist},
		{"path is a directory", func(_ *testing.T, dir string) string { return dir }, syscall.EISDIR},
		{"directory is a file", func(t *testing.T, dir string) string {
			testkit.WriteFile(t, filepath.Join(dir, "file"), "x")
			return filepath.Join(dir, "file", "plants.db")
		}, syscall.ENOTDIR},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := oddDir(t)
			path := tt.path(t, dir)
			before := dirtest.Snapshot(t, dir)
			for name, prepare := range map[string]func() error{
				"PrepareSQLiteFile": func() error { return PrepareSQLiteFile(context.Background(), "sqlite", path) },
				"OpenSQLite": func() error {
					s, err := OpenSQLite(context.Background(), "sqlite", path)
					if err == nil {
						s.Close()
					}
					return err
				},
			} {
				err := prepare()
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("%s(%s) = %v, want %v", name, path, err, tt.wantErr)
				}
				if errors.Is(err, plantstore.ErrUnavailable) {
					t.Errorf("%s = %v, which wraps ErrUnavailable", name, err)
				}
				np, isNP := errors.AsType[*notPlantstoreErr](err)
				_, isPath := errors.AsType[*fs.PathError](err)
				if tt.wantErr == ErrNotPlantstore && (!isNP || np.what != path) {
					t.Errorf("%s = %v, want a *notPlantstoreErr naming %s", name, err, path)
				} else if tt.wantErr != ErrNotPlantstore && !isPath {
					t.Errorf("%s = %v, want an *fs.PathError naming the file or directory", name, err)
				}
				if diff := cmp.Diff(before, dirtest.Snapshot(t, dir)); diff != "" {
					t.Errorf("files changed by a refused %s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestPrepareSQLiteFileRefusesAForeignWALOpenElsewhere(t *testing.T) {
	t.Parallel()
	// Another application has the file open: its tables are in the WAL,
	// not yet in the file itself.
	dir := t.TempDir()
	path := filepath.Join(dir, "plants.db")
	other := openDB(t, "sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if _, err := other.Exec(`CREATE TABLE customers (a)`); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err != nil {
			t.Fatalf("the other application left no %s file: %v", side, err)
		}
	}
	err := PrepareSQLiteFile(context.Background(), "sqlite", path)
	if !errors.Is(err, ErrNotPlantstore) {
		t.Fatalf("PrepareSQLiteFile = %v, want ErrNotPlantstore", err)
	}
}

func TestPrepareSQLiteFileNeedsWriteAccess(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("SKIPPING: root may write any file; cmd/plantstore tests this as user nobody")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "plants.db")
	openSQLite(t, path).Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := PrepareSQLiteFile(context.Background(), "sqlite", path); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("PrepareSQLiteFile of a read-only file = %v, want fs.ErrPermission", err)
	}
	os.Chmod(path, 0o644)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := PrepareSQLiteFile(context.Background(), "sqlite", path); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("PrepareSQLiteFile in a read-only directory = %v, want fs.ErrPermission", err)
	}
}

// TestNewSQLiteFilesAreOwnerOnly opens a new file with OpenSQLite, as the
// binary does, which prepares it with PrepareSQLiteFile: the database, its
// WAL and its shared-memory file are readable by their owner only. Close
// closes the *sql.DB that OpenSQLite opened, and the plant stored is there
// when the file is opened again.
func TestNewSQLiteFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plants.db")
	s := openSQLite(t, path, WithOutbox())
	mustCreate(t, s, "kept", 1)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", f, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := s.db.PingContext(context.Background()); err == nil || !strings.Contains(err.Error(), "database is closed") {
		t.Errorf("Ping of the *sql.DB after Close = %v, want it closed", err)
	}
	wantPlant(t, openSQLite(t, path), plantstore.Plant{ID: 1, Name: "kept"})
}
