package webhook_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/webhook"
)

// TestInstanceName checks that the name holds the host and the address,
// so that two processes on one host never share one.
func TestInstanceName(t *testing.T) {
	t.Parallel()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	got := webhook.InstanceName(addr)
	if !strings.HasPrefix(got, "plantstore ") || !strings.HasSuffix(got, " 127.0.0.1:8080") {
		t.Errorf("InstanceName(%v) = %q, want plantstore, the host and the address", addr, got)
	}
	if other := webhook.InstanceName(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}); other == got {
		t.Errorf("two addresses give the one name %q", got)
	}
}

// TestRunLockPath checks where the run lock goes: in dir, else the
// temporary directory, one file per instance, the same across restarts,
// and none for an address whose port the system picks.
func TestRunLockPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := webhook.RunLockPath(dir, "127.0.0.1:8080", "plantstore h 127.0.0.1:8080")
	if filepath.Dir(a) != dir || !strings.HasSuffix(a, ".lock") {
		t.Errorf("RunLockPath in %s = %q, want a .lock file there", dir, a)
	}
	if again := webhook.RunLockPath(dir, "127.0.0.1:8080", "plantstore h 127.0.0.1:8080"); again != a {
		t.Errorf("RunLockPath = %q, then %q: want the same file across restarts", a, again)
	}
	if b := webhook.RunLockPath(dir, "127.0.0.1:8081", "plantstore h 127.0.0.1:8081"); b == a {
		t.Errorf("two instances share the run lock %q", a)
	}
	if tmp := webhook.RunLockPath("", ":8080", "plantstore h [::]:8080"); filepath.Dir(tmp) != filepath.Clean(os.TempDir()) {
		t.Errorf(`RunLockPath("") = %q, want it in %s`, tmp, os.TempDir())
	}
	for _, addr := range []string{"127.0.0.1:0", ":0", "127.0.0.1:", "no-port"} {
		if got := webhook.RunLockPath(dir, addr, "plantstore h "+addr); got != "" {
			t.Errorf("RunLockPath(%q) = %q, want none: the port is not fixed", addr, got)
		}
	}
}
