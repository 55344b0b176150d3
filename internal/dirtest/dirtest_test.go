package dirtest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/dirtest"
)

func TestSnapshotSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "one")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := dirtest.Snapshot(t, dir)
	if diff := cmp.Diff(before, dirtest.Snapshot(t, dir)); diff != "" {
		t.Errorf("two snapshots of an unchanged directory differ (-first +second):\n%s", diff)
	}
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"file changed", func() { write("a", "two") }},
		{"file created", func() { write("b", "") }},
		{"file removed", func() { os.Remove(filepath.Join(dir, "b")) }},
		{"directory removed", func() { os.Remove(filepath.Join(dir, "sub")) }},
	} {
		before := dirtest.Snapshot(t, dir)
		change.do()
		if cmp.Equal(before, dirtest.Snapshot(t, dir)) {
			t.Errorf("%s: the snapshots are equal", change.name)
		}
	}
}
