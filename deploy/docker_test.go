package deploy_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

// An instruction is one instruction of a Dockerfile: its keyword in capitals
// and its arguments, continuation lines joined.
type instruction struct {
	keyword, args string
}

// readDockerfile returns the instructions of each stage of the Dockerfile
// at path, a stage beginning with its FROM.
func readDockerfile(t *testing.T, path string) [][]instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages [][]instruction
		line   string
	)
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || l == "" && line == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		line += l
		keyword, args, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{strings.ToUpper(keyword), strings.TrimSpace(args)}
		if in.keyword == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before any FROM", path, in.keyword)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

// only returns the argument of the single instruction keyword in stage.
func only(t *testing.T, stage []instruction, keyword string) string {
	t.Helper()
	var found []string
	for _, in := range stage {
		if in.keyword == keyword {
			found = append(found, in.args)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the final stage has %d %s instructions, want 1: %q", len(found), keyword, found)
	}
	return found[0]
}

// execForm parses the JSON array of an exec-form CMD or ENTRYPOINT.
func execForm(t *testing.T, what, s string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("%s %s is not in exec form (a JSON array): a distroless image has no shell to run it", what, s)
	}
	return argv
}

// TestDockerfile builds the server with the go build command of the
// Dockerfile, exactly as the image's build runs it, and checks that the
// binary is static and stripped, as the distroless final stage needs.
// Then it starts that binary in the environment the image gives it (the
// address and the /data directory moved into the test's reach), and runs
// the image's HEALTHCHECK command against it. No container is built: that
// needs a Docker engine, which this check does without.
//
// It is one piece: each check reads the Dockerfile the first parsed, and the binary the build made.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the server; skipped in -short mode")
	}
	stages := readDockerfile(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("the Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}

	var build string
	for _, in := range stages[0] {
		if in.keyword == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0 ", " -trimpath", "./cmd/plantstore"} {
		if !strings.Contains(build, want) {
			t.Fatalf("the build stage's go build is %q, want it to hold %q", build, want)
		}
	}
	out := regexp.MustCompile(` -o (\S+)`).FindStringSubmatch(build)
	if out == nil {
		t.Fatalf("the build stage's go build %q names no -o", build)
	}
	dir := t.TempDir()
	// Built where the next run finds it up to date, unless the Dockerfile's
	// command or the code changed: linking it takes seconds of CPU.
	bin := filepath.Join(testkit.CacheDir(t, "Dockerfile"), "plantstore")
	unlock, err := testkit.LockFile(bin + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", strings.Replace(build, out[0], " -o "+bin, 1))
	cmd.Dir = ".."
	built, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		t.Fatalf("%s: %v\n%s", build, err, built)
	}
	checkStatic(t, bin)
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if wd, _ := filepath.Abs(".."); bytes.Contains(exe, []byte(wd)) {
		t.Errorf("the binary holds the path of the work tree, %s: the build did not trim paths (-trimpath)", wd)
	}

	final := stages[len(stages)-1]
	if user := only(t, final, "USER"); user == "" || user == "root" || strings.HasPrefix(user, "0:") || user == "0" {
		t.Errorf("the final stage runs as USER %q, want an unprivileged one", user)
	}
	copied := regexp.MustCompile(`--from=\S+ \S+ (\S+)$`)
	var binInImage string
	for _, in := range final {
		if m := copied.FindStringSubmatch(in.args); in.keyword == "COPY" && m != nil && strings.HasSuffix(m[1], "/plantstore") {
			binInImage = m[1]
		}
	}
	if entry := execForm(t, "ENTRYPOINT", only(t, final, "ENTRYPOINT")); len(entry) != 1 || entry[0] != binInImage {
		t.Errorf("ENTRYPOINT %q, want the binary the final stage copies, %q, alone", entry, binInImage)
	}

	env := map[string]string{}
	for kv := range strings.FieldsSeq(only(t, final, "ENV")) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.ContainsAny(v, `"'`) {
			t.Fatalf("ENV %q: want KEY=VALUE pairs without quotes", kv)
		}
		env[k] = v
	}
	volume := only(t, final, "VOLUME")
	if !strings.HasPrefix(env["PLANTSTORE_DB"], volume+"/") {
		t.Errorf("PLANTSTORE_DB=%s is not in the VOLUME %s", env["PLANTSTORE_DB"], volume)
	}
	host, port, err := net.SplitHostPort(env["PLANTSTORE_ADDR"])
	if err != nil || host != "0.0.0.0" || only(t, final, "EXPOSE") != port {
		t.Errorf("PLANTSTORE_ADDR=%s, EXPOSE %s: want the server on every address at the exposed port",
			env["PLANTSTORE_ADDR"], only(t, final, "EXPOSE"))
	}

	// The image's environment, with the volume in the test's directory and
	// a free loopback port rather than every address's 8080.
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	run := []string{"PLANTSTORE_TOKENS=docker-test"}
	for k, v := range env {
		switch k {
		case "PLANTSTORE_ADDR":
			v = "127.0.0.1:0"
		case "PLANTSTORE_DB":
			v = data + strings.TrimPrefix(v, volume)
		}
		run = append(run, k+"="+v)
	}
	server := testkit.Start(t, bin, testkit.Env(run...))
	if _, err := os.Stat(filepath.Join(data, filepath.Base(env["PLANTSTORE_DB"]))); err != nil {
		t.Errorf("the server did not make its database in the volume: %v", err)
	}

	_, check, ok := strings.Cut(only(t, final, "HEALTHCHECK"), "CMD ")
	if !ok {
		t.Fatal("the HEALTHCHECK runs no CMD")
	}
	argv := execForm(t, "HEALTHCHECK CMD", check)
	if argv[0] != binInImage {
		t.Fatalf("the HEALTHCHECK runs %s, want the image's binary %s: the image has no other program", argv[0], binInImage)
	}
	probe := exec.Command(bin, argv[1:]...)
	probe.Env = testkit.Env(append(run, "PLANTSTORE_ADDR="+strings.TrimPrefix(server.URL, "http://"))...)
	b, err := probe.CombinedOutput()
	if err != nil {
		t.Errorf("HEALTHCHECK %q against the running server: %v\n%s", argv, err, b)
	}
	t.Logf("HEALTHCHECK %q: %s", argv, strings.TrimSpace(string(b)))
	if err := server.Stop(t); err != nil {
		t.Errorf("the server exited with %v on SIGTERM, want status 0\n%s", err, server.Stderr)
	}
}

// checkStatic fails the test unless bin is an ELF executable that needs no
// dynamic loader or shared library (so it runs on distroless/static or
// scratch) and has no symbol table (-ldflags=-s).
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: it is dynamically linked", bin, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q (%v)", bin, libs, err)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s has a symbol table: the build did not strip it (-ldflags='-s')", bin)
	}
}
