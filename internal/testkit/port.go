package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// FreeAddr returns a loopback address that nothing listened on a moment
// ago, for a process the test starts to listen on (see FreePort).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// FreePort returns a loopback TCP port that nothing listened on a moment
// ago. It is drawn outside the kernel's range of ephemeral ports (Linux:
// net.ipv4.ip_local_port_range), where the port of a listener on port 0
// and the local port of every outgoing connection come from: a port from
// that range could be taken by another test before the caller's process
// listens there, which made a process fail to start, now and then, while
// the race-enabled suite ran.
func FreePort() (int, error) {
	lo, hi := 10000, 32768 // below Linux's default range, 32768–60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil {
			lo, hi = 10000, first
			if first-lo < 1000 {
				lo, hi = last+1, 65536
			}
		}
	}
	for range 100 {
		port := lo + rand.IntN(max(hi-lo, 1))
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	// Every pick was taken: the kernel's choice, then.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
