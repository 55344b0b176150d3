package deploy_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestMemoryFleet runs fleet.sh with its instances on memory storage, so
// that HAProxy and the script are tested without a database.
//
// "script settings": with no port set, fleet.sh picks free ones, prints
// them and records HAProxy's address in $FLEET_DIR/url; a second start
// reuses them; HAProxy's log keeps the first run's lines; and restart
// refuses an instance the fleet does not have.
//
// The request ids: a request's X-Request-Id is the same in HAProxy's log,
// in the instance's access log and in the answer: a client's own when
// plantstore would keep it, else a UUID HAProxy makes; and HAProxy's own
// answers carry one too (last: it stops the instances), an error 503 that
// no instance made.
func TestMemoryFleet(t *testing.T) {
	t.Parallel()
	f := startFleet(t, "memory")
	t.Run("script settings", func(t *testing.T) {
		printed := fleetLine.FindStringSubmatch(f.started)
		if printed[1] != f.url {
			t.Errorf("fleet.sh start printed %s, and wrote %s in url", printed[1], f.url)
		}
		for _, addr := range append([]string{strings.TrimPrefix(f.url, "http://")}, printed[2:]...) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("nothing listens on %s, which fleet.sh start printed: %v", addr, err)
				continue
			}
			c.Close()
		}
		if id := requestID(t, f.url, "first-run"); id != "first-run" {
			t.Fatalf("request id %q", id)
		}
		waitLogged(t, "HAProxy's log", `first-run$`, f.file("haproxy.log"))

		f.script(t, "stop")
		again := f.script(t, "start")
		if !strings.Contains(again, printed[0]) {
			t.Errorf("the second start printed %q, want the first's ports again: %q", again, printed[0])
		}
		if id := requestID(t, f.url, "second-run"); id != "second-run" {
			t.Fatalf("request id %q", id)
		}
		waitLogged(t, "HAProxy's log", `second-run$`, f.file("haproxy.log"))
		b, err := os.ReadFile(f.file("haproxy.log"))
		if err != nil {
			t.Fatal(err)
		}
		if log := string(b); !strings.Contains(log, "first-run") || strings.Count(log, "fleet.sh start: HAProxy on") != 2 {
			t.Errorf("HAProxy's log after two runs:\n%s\nwant both runs' lines", log)
		}

		c := exec.Command("./fleet.sh", "restart", "ps4")
		c.Env = f.env
		if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "no ps4") {
			t.Errorf("fleet.sh restart ps4 in a fleet of three = %v, %q; want an error naming ps4", err, out)
		}
	})

	tests := []struct {
		name   string
		sent   []string // X-Request-Id headers
		kept   bool
		reason string
	}{
		{"a client's id", []string{"trace-7f3a"}, true, ""},
		{"none", nil, false, ""},
		{"with a space", []string{"two words"}, false, "plantstore keeps printable ASCII without spaces"},
		{"two headers", []string{"one", "two"}, false, "plantstore keeps an id only when there is one header"},
		{"129 bytes", []string{strings.Repeat("x", 129)}, false, "plantstore keeps at most 128 bytes"},
		{"128 bytes", []string{strings.Repeat("x", 128)}, false, "HAProxy's unique id holds at most 127 bytes: replaced rather than cut"},
		{"127 bytes with commas", []string{strings.Repeat("a,", 63) + "a"}, true, "a comma is printable: the header is taken whole, not as a list"},
	}
	for _, tt := range tests {
		t.Run("request id/"+tt.name, func(t *testing.T) {
			id := requestID(t, f.url, tt.sent...)
			switch {
			case tt.kept && id != tt.sent[0]:
				t.Errorf("X-Request-Id %q came back as %q, want it kept (%s)", tt.sent, id, tt.reason)
			case !tt.kept && !uuid.MatchString(id):
				t.Errorf("X-Request-Id %q came back as %q, want a UUID HAProxy made (%s)", tt.sent, id, tt.reason)
			}
			waitLogged(t, "HAProxy's log", `"GET /plants/1 HTTP/1.1" `+regexp.QuoteMeta(id)+`$`, f.file("haproxy.log"))
			waitLogged(t, "an instance's access log", `msg=request .* request_id=`+regexp.QuoteMeta(id)+`( |$)`,
				f.file("ps1.log"), f.file("ps2.log"), f.file("ps3.log"))
		})
	}

	t.Run("request id/HAProxy's own answer", func(t *testing.T) {
		for _, name := range []string{"ps1", "ps2", "ps3"} {
			if err := syscall.Kill(f.pid(t, name), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		testkit.WaitUntil(t, 30*time.Second, "HAProxy to mark every instance down", func() bool {
			st := f.serverStatus(t)
			return st["ps1"] == "DOWN" && st["ps2"] == "DOWN" && st["ps3"] == "DOWN"
		})
		if id := requestID(t, f.url, "trace-nobody"); id != "trace-nobody" {
			t.Errorf("HAProxy's error 503 carries X-Request-Id %q, want the client's", id)
		}
		if c := send(f.url, -1); c.code != 503 {
			t.Errorf("%v with every instance down; want HAProxy's error 503", c)
		}
		waitLogged(t, "HAProxy's log", ` 503 .*"GET /plants/1 HTTP/1.1" trace-nobody$`, f.file("haproxy.log"))
	})
}

// uuid is the form of the request ids HAProxy makes.
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// requestID sends GET /plants/1 with the X-Request-Id headers ids and
// returns the one its answer carries.
func requestID(t *testing.T, url string, ids ...string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/plants/1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for _, id := range ids {
		req.Header.Add("X-Request-Id", id)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := resp.Header.Values("X-Request-Id")
	if len(got) != 1 {
		t.Fatalf("the answer's X-Request-Id headers: %q, want one", got)
	}
	return got[0]
}

// waitLogged waits until a line of one of files matches the regular
// expression line, and fails the test if none does within 10 s: logs are
// written a little after the answer.
func waitLogged(t *testing.T, what, line string, files ...string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)` + line)
	testkit.WaitUntil(t, 10*time.Second, fmt.Sprintf("a line of %s matching %q", what, line), func() bool {
		return slices.ContainsFunc(files, func(file string) bool { b, _ := os.ReadFile(file); return re.Match(b) })
	})
}
