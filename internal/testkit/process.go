// Package testkit holds what the tests of several packages share: it
// builds a command or an example, starts it as a process and stops it, for
// tests that talk to the real program over loopback (Build, Start, Run);
// it waits for a condition with a deadline rather than a fixed sleep
// (WaitUntil); it creates a plant and reads every plant a server holds
// (Create, Plants); it GETs a URL, reads an Error's code and parses a
// Prometheus scrape (Get, ErrorCode, Scrape); it counts log records by
// message (Logged) and makes a logger whose lines compare whole
// (NewLogger); it makes TLS certificates (CA); it reads the
// process's CPU time for benchmarks (ProcessCPU); and it marks the long
// scenarios, which run with PLANTSTORE_TEST_LONG=1 (Long), and runs a
// package's tests more at a time than GOMAXPROCS (Main).
package testkit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
// relative to the test's own) and returns the executable's path. It skips
// the test in -short mode.
//
// The executable lives in the user's cache directory, one per package and
// work tree, shared by every test and every test run: go build finds it
// up to date when nothing it is built from changed, and does not link it
// again. Linking the server takes seconds of CPU, and a dozen test
// packages start it. Tests must not change the file.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a program; skipped in -short mode")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	target := pkg
	if strings.HasPrefix(pkg, ".") {
		target = filepath.Join(wd, pkg)
	}
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*builtBin{}
	}
	b := built.bins[target]
	if b == nil {
		b = &builtBin{}
		built.bins[target] = b
	}
	built.mu.Unlock()
	b.once.Do(func() { b.path, b.err = build(wd, target) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// built holds what Build built in this process, by package.
var built struct {
	mu   sync.Mutex
	bins map[string]*builtBin
}

type builtBin struct {
	once sync.Once
	path string
	err  error
}

// build runs go build for target into its file in the cache, holding the
// file's lock: other test processes may build the same package at once.
func build(wd, target string) (string, error) {
	dir, err := cacheDir(wd, target)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(target))
	unlock, err := LockFile(bin + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if out, err := exec.Command("go", "build", "-o", bin, target).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", target, err, out)
	}
	return bin, nil
}

// CacheDir returns a directory of the user's cache that belongs to key
// and to the work tree of the test's module, made if missing, and kept
// from one test run to the next: for a program a test builds its own way,
// which go build then finds up to date. Take LockFile of a file in it
// before writing there: other test processes may do the same at once.
func CacheDir(t testing.TB, key string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cacheDir(wd, key)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func cacheDir(wd, key string) (string, error) {
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
		root = up
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root + "\x00" + key))
	parent := filepath.Join(cache, "plantstore-test")
	dir := filepath.Join(parent, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		return "", err
	}
	trimOnce.Do(func() { trim(parent, now.Add(-cacheUnused)) })
	return dir, nil
}

// cacheUnused is how long a directory of CacheDir may go unused before
// a test run removes it, as go's build cache trims what it has not used
// for five days: work trees come and go (CI clones one for each run).
const cacheUnused = 5 * 24 * time.Hour

var trimOnce sync.Once

// trim removes the directories in parent last used before old.
func trim(parent string, old time.Time) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() && info.ModTime().Before(old) {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// BuildAt compiles the main package pkg into the file bin, linking it
// anew: for a program that must live where other users can reach it,
// which the test's temporary directory forbids.
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
