//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// A readmeStep is one command of the curl walkthrough and the lines
// docs/api.md says it prints.
type readmeStep struct {
	command string
	want    []string
}

// readmeSteps returns the commands of the "Try it with curl" section of
// docs/api.md, which the README points to, in order.
func readmeSteps(t *testing.T) []readmeStep {
	t.Helper()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Try it with curl\n")
	end := strings.Index(readme, "## Operations\n")
	if start < 0 || end < start {
		t.Fatal(`docs/api.md has no "## Try it with curl" section before "## Operations"`)
	}
	var steps []readmeStep
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme[start:end], -1) {
		for line := range strings.Lines(block[1]) {
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.TrimSpace(line) == "":
			case strings.HasPrefix(line, "# "):
				if len(steps) == 0 {
					t.Fatalf("docs/api.md walkthrough: output %q before any command", line)
				}
				steps[len(steps)-1].want = append(steps[len(steps)-1].want, expectedOutput(line[2:]))
			default:
				steps = append(steps, readmeStep{command: line})
			}
		}
	}
	if len(steps) < 10 {
		t.Fatalf("docs/api.md walkthrough: found %d commands, want the whole walkthrough", len(steps))
	}
	return steps
}

// annotation is a comment after an output line, set off by two or more
// spaces.
var annotation = regexp.MustCompile(`^(.*?\S)\s{2,}\S.*$`)

// expectedOutput turns an output line of the walkthrough into a regular
// expression: the line without its annotation, where what changes from
// run to run (a generated request id, a time, a duration) may differ.
func expectedOutput(line string) string {
	if m := annotation.FindStringSubmatch(line); m != nil {
		line = m[1]
	}
	re := regexp.QuoteMeta(line)
	re = regexp.MustCompile(`[0-9a-f]{32}`).ReplaceAllString(re, `[0-9a-f]{32}`)
	re = regexp.MustCompile(`(time|duration)=\S+`).ReplaceAllString(re, `$1=\S+`)
	return "^" + re + "$"
}

// TestCurlWalkthrough runs the curl walkthrough of docs/api.md with bash, as a
// newcomer pastes it (on a free port, with its files in a temporary
// directory), and checks every command's output against docs/api.md.
func TestCurlWalkthrough(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server; skipped in -short mode")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walkthrough needs %s: %v", tool, err)
		}
	}
	steps := readmeSteps(t)
	dir, addr := t.TempDir(), testkit.FreeAddr(t)
	const marker = "@@step-done@@"
	script := "trap 'kill $PID 2>/dev/null' EXIT\n"
	for _, s := range steps {
		c := strings.ReplaceAll(s.command, "/tmp/plantstore", filepath.Join(dir, "plantstore"))
		c = strings.ReplaceAll(c, "localhost:8080", addr)
		script += c + "\necho " + marker + "\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	// The script starts a server in the background: on a timeout, kill the
	// whole process group, not bash alone, so that none is left running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Dir = "../.."
	cmd.Env = testkit.Env("PLANTSTORE_ADDR=" + addr)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	outputs := strings.Split(string(out), marker+"\n")
	if len(outputs) != len(steps)+1 {
		t.Fatalf("the walkthrough ran %d of %d commands:\n%s", len(outputs)-1, len(steps), out)
	}
	for i, s := range steps {
		got := strings.Split(strings.TrimSuffix(outputs[i], "\n"), "\n")
		if outputs[i] == "" {
			got = nil
		}
		ok := len(got) == len(s.want)
		for j := 0; ok && j < len(got); j++ {
			ok = regexp.MustCompile(s.want[j]).MatchString(got[j])
		}
		if !ok {
			t.Errorf("docs/api.md: %s\nprints %q\nwant lines matching %q", s.command, got, s.want)
		}
	}
	if t.Failed() {
		log, _ := os.ReadFile(filepath.Join(dir, "plantstore.log"))
		t.Logf("the server's log:\n%s", log)
	}
}
