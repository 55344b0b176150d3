package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestSystemdUnitSettings starts the binary with the variables
// deploy/plantstore.service sets, as systemd would, only on a free port and
// in a temporary directory: it starts, logs in the unit's format, and warns
// of no variable it does not read.
func TestSystemdUnitSettings(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("plantstore.service")
	if err != nil {
		t.Fatal(err)
	}
	bin := testkit.Build(t, "../cmd/plantstore")
	credentials := t.TempDir() // what systemd substitutes for %d
	testkit.WriteFile(t, filepath.Join(credentials, "tokens"), "unit-test-token\n")
	state := t.TempDir()
	var env []string
	for line := range strings.Lines(string(b)) {
		kv, ok := strings.CutPrefix(strings.TrimSpace(line), "Environment=")
		if !ok {
			continue
		}
		kv = strings.ReplaceAll(kv, "%d", credentials)
		kv = strings.ReplaceAll(kv, "/var/lib/plantstore", state)
		kv = strings.ReplaceAll(kv, ":8080", ":0")
		env = append(env, kv)
	}
	if len(env) == 0 {
		t.Fatal("the unit sets no variable")
	}
	p := testkit.Start(t, bin, testkit.Env(env...))
	if err := p.Stop(t); err != nil {
		t.Fatalf("the binary with the unit's settings %q: %v\n%s", env, err, p.Stderr)
	}
	logs := p.Stderr.String()
	if strings.Contains(logs, "not a variable plantstore reads") {
		t.Errorf("the unit sets a variable the binary does not read:\n%s", logs)
	}
	if !strings.HasPrefix(logs, "{") {
		t.Errorf("the log is not JSON, as the unit's PLANTSTORE_LOG_FORMAT asks:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(state, "plants.db")); err != nil {
		t.Errorf("the unit's database: %v", err)
	}
}
