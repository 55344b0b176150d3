// Package testkit holds what the tests of several packages share: it
// builds a command or an example, starts it as a process and stops it, for
// tests that talk to the real program over loopback (Build, Start, Run);
// it waits for a condition with a deadline rather than a fixed sleep
// (WaitUntil); and it reads every plant a server holds (ListAll).
package testkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Wait bounds how long a program may take to build, to start listening,
// or to exit once stopped.
const Wait = 2 * time.Minute

// Build compiles the main package pkg (an import path, or a directory
// relative to the test's own) into the test's temporary directory and
// returns the executable's path. It skips the test in -short mode.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a program; skipped in -short mode")
	}
	name := filepath.Base(pkg)
	if name == "." || name == ".." {
		name = "program"
	}
	bin := filepath.Join(t.TempDir(), name)
	BuildAt(t, bin, pkg)
	return bin
}

// BuildAt compiles the main package pkg as Build does, into the file bin:
// for a program that must live where other users can reach it, which the
// test's temporary directory forbids.
func BuildAt(t testing.TB, bin, pkg string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a program; skipped in -short mode")
	}
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
}

// shared holds the programs BuildShared built, by package, for the whole
// test binary.
var shared struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*sharedBin
}

type sharedBin struct {
	once sync.Once
	name string // of the executable: unique among the shared ones
	path string
	err  error
}

// BuildShared compiles pkg as Build does, but once per test binary: every
// test that asks for pkg gets the same executable. Call RemoveShared from
// TestMain, after m.Run, to delete it.
func BuildShared(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a program; skipped in -short mode")
	}
	shared.mu.Lock()
	if shared.bins == nil {
		shared.bins = map[string]*sharedBin{}
	}
	b := shared.bins[pkg]
	if b == nil {
		b = &sharedBin{name: fmt.Sprintf("%s-%d", filepath.Base(pkg), len(shared.bins))}
		shared.bins[pkg] = b
	}
	shared.mu.Unlock()
	b.once.Do(func() {
		shared.mu.Lock()
		if shared.dir == "" {
			shared.dir, b.err = os.MkdirTemp("", "plantstore-test-bin-")
		}
		dir := shared.dir
		shared.mu.Unlock()
		if b.err != nil {
			return
		}
		b.path = filepath.Join(dir, b.name)
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RemoveShared deletes what BuildShared built.
func RemoveShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// A Buffer collects a process's output safely across goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A Process is a started program.
type Process struct {
	Cmd *exec.Cmd
	// URL is the base URL the program printed in its "listening on" line.
	URL            string
	Stdout, Stderr *Buffer
	exited         chan struct{} // closed once the process has exited
	err            error         // how it exited, once exited is closed
}

// listening finds the address in a line such as "listening on
// http://127.0.0.1:8080", on either output, after a log prefix or not.
var listening = regexp.MustCompile(`listening on (https?://[^\s;,]+)`)

// Env returns the test's environment without any PLANTSTORE_ variable,
// which would change what the program does, and with extra added.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLANTSTORE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Start starts bin with args in the environment env (see [Env]), waits
// for its "listening on" line, and kills it when the test ends if it is
// still running.
func Start(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	return StartCmd(t, cmd)
}

// StartCmd starts cmd as [Start] starts a program. An output the caller
// has set on cmd, such as a pipe it means to leave unread, stays the
// caller's: the Process's Buffer for it stays empty, and the "listening
// on" line must come on the other.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := start(t, cmd)
	if p.URL == "" {
		t.Fatalf("%s exited before listening: %v\nstdout:\n%s\nstderr:\n%s", cmd.Path, p.err, p.Stdout, p.Stderr)
	}
	return p
}

// StartOrExit starts cmd as [StartCmd] does, but returns as soon as the
// program either listens or exits: for a program that may refuse to start.
// The Process's URL is "" when it exited, and [Process.Err] says how.
func StartOrExit(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	return start(t, cmd)
}

func start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p, err := Launch(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// Launch starts cmd and returns once the program either listens or exits;
// then the Process's URL is "" and [Process.Err] says how it exited. It
// needs no test, so that a goroutine other than the test's may restart a
// program, and leaves stopping the program to the caller. Its error says
// the program could not be started, or printed nothing in time (it is
// then killed).
func Launch(cmd *exec.Cmd) (*Process, error) {
	bin := cmd.Path
	p := &Process{Cmd: cmd, Stdout: &Buffer{}, Stderr: &Buffer{}, exited: make(chan struct{})}
	type output struct {
		r   io.Reader
		buf *Buffer
	}
	var outputs []output
	if cmd.Stdout == nil {
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		outputs = append(outputs, output{stdout, p.Stdout})
	}
	if cmd.Stderr == nil {
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		outputs = append(outputs, output{stderr, p.Stderr})
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	urls := make(chan string, 2)
	var readers sync.WaitGroup
	for _, s := range outputs {
		readers.Go(func() {
			sc := bufio.NewScanner(s.r)
			for sc.Scan() {
				line := sc.Text()
				s.buf.Write([]byte(line + "\n"))
				if m := listening.FindStringSubmatch(line); m != nil {
					select {
					case urls <- m[1]:
					default:
					}
				}
			}
			io.Copy(io.Discard, s.r)
		})
	}
	go func() {
		// Wait closes the pipes: read them to the end first.
		readers.Wait()
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.URL = <-urls:
	case <-p.exited:
		// A line may have come just before the exit.
		select {
		case p.URL = <-urls:
		default:
		}
	case <-time.After(Wait):
		cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("%s did not print where it listens\nstdout:\n%s\nstderr:\n%s", bin, p.Stdout, p.Stderr)
	}
	return p, nil
}

// Exited returns a channel that is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err returns how the process exited, nil for status 0, once [Process.Exited]
// is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Stop sends the process SIGTERM and returns how it exited: nil for
// status 0.
func (p *Process) Stop(t testing.TB) error {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	return p.Wait(t)
}

// Wait waits for the process to exit and returns how it exited.
func (p *Process) Wait(t testing.TB) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(Wait):
		t.Fatalf("%s did not exit\nstderr:\n%s", p.Cmd.Path, p.Stderr)
		return nil
	}
}

// Run runs bin with args in env to the end and returns its output and how
// it exited.
func Run(t testing.TB, bin string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(Wait):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not finish", bin, args)
	}
	return out.String(), errOut.String(), err
}
