package webhook_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestSubscriberResponsesNotLogged has subscribers answer with text that
// may hold their own secrets, as a response net/http cannot parse and as
// the body of a failure, and checks that the log at warning level and
// above holds neither, only the status and the length, and that debug
// level holds at most a short, escaped prefix.
func TestSubscriberResponsesNotLogged(t *testing.T) {
	t.Parallel()
	const secret = "SUBSCRIBER-SECRET-hunter2-0123456789abcdefghijklmnopqrstuvwxyz"
	// A subscriber that answers what is not HTTP.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				c.Write([]byte(secret + " \u202e\x1b[31m not HTTP\r\n\r\n"))
			}()
		}
	}()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(secret))
	}))
	t.Cleanup(failing.Close)
	for _, tt := range []struct {
		name, url, want, wantPrefix string
	}{
		{"malformed", "http://" + ln.Addr().String() + "/hook", "malformed HTTP response (", `prefix="\"`},
		{"failure body", failing.URL + "/hook", "response status 500, 62 bytes", `prefix="\"SUBSCRIBER-SECRET`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mo := webhook.NewMemoryOutbox()
			d, l, stop := start(t, mo, []string{tt.url})
			mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 1, Name: "p"})
			testkit.WaitUntil(t, time.Minute, "a failed attempt", func() bool { return d.Stats().FailedAttempts > 0 })
			stop()
			var warn, debug []string
			for _, line := range strings.Split(l.String(), "\n") {
				if strings.Contains(line, "level=DEBUG") {
					debug = append(debug, line)
				} else {
					warn = append(warn, line)
				}
			}
			all := strings.Join(warn, "\n")
			if strings.Contains(all, "hunter2") || strings.Contains(all, "\u202e") || strings.Contains(all, "\x1b") {
				t.Errorf("the log above debug holds the subscriber's answer:\n%s", all)
			}
			if !strings.Contains(all, tt.want) {
				t.Errorf("the log above debug does not say %q:\n%s", tt.want, all)
			}
			dbg := strings.Join(debug, "\n")
			if strings.Contains(dbg, "0123456789abcdef") || strings.Contains(dbg, "\u202e") || strings.Contains(dbg, "\x1b") {
				t.Errorf("the debug log holds more than a short escaped prefix:\n%s", dbg)
			}
			if !strings.Contains(dbg, tt.wantPrefix) {
				t.Errorf("the debug log lacks the escaped prefix:\n%s", l.String())
			}
		})
	}
}
