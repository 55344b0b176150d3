package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
)

// InstanceName returns a name for [WithInstance] for the process that
// listens on addr: "plantstore", the host's name and addr. Each run
// claims under an owner of its own, so live twins with one name never
// share a lease; a restart takes back its previous run's deliveries once
// that run is gone (see [RunLockPath]).
func InstanceName(addr net.Addr) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return "plantstore " + host + " " + addr.String()
}

// RunLockPath returns a file for [WithRunLock] for instance, named after
// it, in dir, or in the temporary directory when dir is "". A service's
// state directory (systemd's STATE_DIRECTORY) suits, as it outlives a
// restart where a private /tmp does not. It returns "", no run lock, when
// listenAddr, the address asked for, has no fixed port ("host:0"): the
// instance is then named anew at each start, and its file would only be
// left behind.
func RunLockPath(dir, listenAddr, instance string) string {
	if _, port, err := net.SplitHostPort(listenAddr); err != nil || port == "" || port == "0" {
		return ""
	}
	if dir == "" {
		dir = os.TempDir()
	}
	sum := sha256.Sum256([]byte(instance))
	return filepath.Join(dir, "plantstore-webhook-"+hex.EncodeToString(sum[:8])+".lock")
}
