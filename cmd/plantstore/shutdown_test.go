package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestDrainedCreatesAreDelivered stops the binary while two creates are
// in flight, their bodies not yet sent. The first is finished during the
// drain and answered 200; the second holds the drain open until the
// first's webhook has arrived: deliveries go on while the requests drain,
// and stop only after, so that a create acknowledged during the drain is
// delivered even from a memory outbox, which the end of the process
// empties.
func TestDrainedCreatesAreDelivered(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-shutdown-timeout", "30s",
		"-read-timeout", "30s", "-webhook", receiver.URL}, map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret})
	addr := strings.TrimPrefix(url, "http://")
	// half sends a create's headers, asking to be told to go on with the
	// body (Expect: 100-continue), and waits for "100 Continue": then its
	// handler is reading the body, and the create is in flight. A request
	// the server has only accepted, not read, when the drain begins is
	// closed unanswered by net/http, which is not what this test is about.
	type halfSent struct {
		conn net.Conn
		r    *bufio.Reader
		body string
	}
	half := func(id int) halfSent {
		body := fmt.Sprintf(`{"id":%d,"name":"drained"}`, id)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer tok\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("create %d: %v, want 100 Continue (%v)", id, resp, err)
		}
		return halfSent{conn, r, body}
	}
	finish := func(h halfSent) {
		t.Helper()
		if _, err := io.WriteString(h.conn, h.body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(h.r, nil)
		if err != nil {
			t.Fatalf("no answer to a create finished during the drain: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("a create finished during the drain was answered %d", resp.StatusCode)
		}
	}
	first, second := half(1), half(2)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testkit.WaitUntil(t, 10*time.Second, "the listener to close for the drain", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	finish(first)
	testkit.WaitUntil(t, 10*time.Second, "the webhook of the create acknowledged during the drain", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1 && strings.Contains(got[0], `"id":1`)
	})
	finish(second)
	if err := <-stopped; err != nil {
		t.Fatalf("run = %v after the drain\n%s", err, stderr)
	}
}
