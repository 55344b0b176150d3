// Package dirtest helps tests check what a program did to a directory.
package dirtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot returns the sha256 of every file in dir by name, and
// "directory" for each subdirectory, so that a test can tell, by comparing
// two snapshots, that nothing was created, removed or changed there.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			sums[e.Name()] = "directory"
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		sums[e.Name()] = hex.EncodeToString(sum[:])
	}
	return sums
}
