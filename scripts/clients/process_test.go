package clients_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is plantstore's module, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// command runs argv in dir, the test's own when "", and returns its
// standard output; it fails the test, with the output, if argv fails.
func command(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s (in %q): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), dir, err, out, stderr.Bytes())
	}
	return string(out)
}

// buildServer builds cmd/plantstore, in plantstore's own module, and
// returns the executable.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "plantstore")
	command(t, repoRoot(t), "go", "build", "-o", bin, "./cmd/plantstore")
	return bin
}

// listening finds the URL in the server's "listening on" line.
var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startServer starts bin with memory storage on a free loopback port,
// accepting token, with args, and returns its URL. It stops the server
// when the test ends, and fails the test if it did not exit cleanly.
func startServer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-db", "memory"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLANTSTORE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PLANTSTORE_TOKENS="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the server exited with %v\n%s", err, &stderr)
			}
		case <-time.After(wait):
			cmd.Process.Kill()
			<-exited
			t.Errorf("the server did not stop on SIGTERM\n%s", &stderr)
		}
	})
	select {
	case u := <-urls:
		return u
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("the server exited before listening: %v\n%s", err, &stderr)
	case <-time.After(wait):
		t.Fatalf("the server did not say where it listens\n%s", &stderr)
	}
	return ""
}

// get returns the body of a GET of u, which must answer 200.
func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", u, resp.StatusCode, err, body)
	}
	return body
}

// buildGo generates a Go client with the generator that gen's command
// line runs (given the directory to write to), into a temporary
// directory, and builds the command pkg over it, the generated code
// standing in for package pkg/api (go build -overlay): nothing is written
// to the work tree, and code go generate left there is not used. It
// returns the executable.
func buildGo(t *testing.T, pkg, api string, gen func(out string) []string) []string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, api)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	module, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	command(t, module, gen(out)...)

	inTree := filepath.Join(module, pkg, api)
	overlay := map[string]string{}
	left, _ := filepath.Glob(filepath.Join(inTree, "*.go"))
	for _, f := range left {
		overlay[f] = "" // removed
	}
	generated, err := filepath.Glob(filepath.Join(out, "*.go"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("%s generated no Go file in %s (%v)", gen(out)[2], out, err)
	}
	for _, f := range generated {
		overlay[filepath.Join(inTree, filepath.Base(f))] = f
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, pkg)
	command(t, module, "go", "build", "-overlay", overlayPath, "-o", exe, "./"+pkg)
	return []string{exe}
}

// nodeAtLeast is the oldest Node.js the TypeScript client is run with.
var nodeAtLeast = [2]int{20, 0}

// buildTypeScript generates the TypeScript client's types from doc with
// openapi-typescript, type-checks and compiles the scenario with tsc, and
// returns the command that runs it with Node.js. The tools are those
// pinned in typescript/, installed once per version of the pins.
func buildTypeScript(t *testing.T, doc string) []string {
	t.Helper()
	tools := npmTools(t)
	dir := t.TempDir()
	for _, f := range []string{"package.json", "tsconfig.json", "scenario.ts"} {
		b, err := os.ReadFile(filepath.Join("typescript", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(tools, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	command(t, dir, filepath.Join(bin, "openapi-typescript"), doc, "--output", "schema.d.ts")
	command(t, dir, filepath.Join(bin, "tsc"), "-p", ".")
	return []string{"node", filepath.Join(dir, "dist", "scenario.js")}
}

// npmTools installs the packages that typescript/package-lock.json pins
// into the user's cache directory, once for each version of the pins, and
// returns where. It skips the test when npm or a recent enough Node.js is
// missing, or when the install fails (the registry is unreachable), unless
// the variable CI is set, as CI runs set it: there the TypeScript client
// must be checked.
func npmTools(t *testing.T) string {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format+"; CI is set, and CI checks the TypeScript client", args...)
		}
		t.Skipf(format+"; the TypeScript client is not checked (with CI set, this fails)", args...)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm is not installed")
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		skip("node does not run: %v", err)
	}
	if v := strings.TrimSpace(string(out)); !atLeast(v, nodeAtLeast) {
		skip("node %s is older than v%d.%d", v, nodeAtLeast[0], nodeAtLeast[1])
	}

	files := []string{"package.json", "package-lock.json"}
	sum := sha256.New()
	contents := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("typescript", f))
		if err != nil {
			t.Fatal(err)
		}
		contents[f] = b
		sum.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		skip("no cache directory to install the TypeScript tools in: %v", err)
	}
	dir := filepath.Join(cache, "plantstore", "clients-typescript-"+hex.EncodeToString(sum.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}
	// Install next to dir and rename, so that a test process running at
	// the same time never sees half an install.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		skip("cannot create the cache directory: %v", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		skip("cannot create the cache directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	for f, b := range contents {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("npm ci of typescript/ failed: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			t.Fatalf("install the TypeScript tools: %v", err)
		}
		// Another test process installed them first.
	}
	return dir
}

// atLeast reports whether the Node.js version v ("v20.19.2") is at least
// min.
func atLeast(v string, min [2]int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}
