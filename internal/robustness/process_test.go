package robustness

import (
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// binary builds the plantstore command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	return testkit.Build(t, "github.com/plantstore/plantstore/cmd/plantstore")
}

const token = "robustness-test-token"

// A server is one plantstore instance that may be killed and started
// again with the same arguments, on a new port.
type server struct {
	t    *testing.T
	name string
	args []string
	log  *testkit.Buffer // standard error of every run

	url   atomic.Pointer[string] // nil while the instance is down
	mu    sync.Mutex
	p     *testkit.Process // nil while the instance is down
	kills int
}

// startServer starts the built binary with args and waits until it
// listens. The instance is killed when the test ends.
func startServer(t *testing.T, name string, args ...string) *server {
	t.Helper()
	s := &server{t: t, name: name, args: args, log: &testkit.Buffer{}}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.kill()
		if log := s.log.String(); t.Failed() {
			t.Logf("%s's standard error, the end:\n%s", s.name, log[max(0, len(log)-4<<10):])
		}
	})
	return s
}

// URL returns the instance's base URL, or "" while it is down.
func (s *server) URL() string {
	if u := s.url.Load(); u != nil {
		return *u
	}
	return ""
}

// start starts the instance. It may run on a goroutine other than the
// test's, so it returns its error rather than fail the test.
func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(binary(s.t), append([]string{"-addr", "127.0.0.1:0", "-log-level", "warn"}, s.args...)...)
	cmd.Env = testkit.Env("PLANTSTORE_TOKENS=" + token)
	cmd.Stderr = s.log
	p, err := testkit.Launch(cmd)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if p.URL == "" {
		return fmt.Errorf("%s exited before listening: %v\n%s", s.name, p.Err(), s.log)
	}
	s.p = p
	s.url.Store(&p.URL)
	return nil
}

// kill sends SIGKILL to the instance and waits until it has exited.
func (s *server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.url.Store(nil)
	if s.p == nil {
		return
	}
	s.p.Cmd.Process.Signal(syscall.SIGKILL)
	<-s.p.Exited()
	s.p = nil
	s.kills++
}
