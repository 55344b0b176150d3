package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
)

// recordingHandler is a slog.Handler that keeps the records it is given,
// at or above its level.
type recordingHandler struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler                { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *recordingHandler) records() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.recs...)
}

func TestAccessLog(t *testing.T) {
	rh := &recordingHandler{level: slog.LevelInfo}
	h := httpapi.New(plantstore.New(plantstore.NewMemoryStorage()),
		httpapi.WithTokens(testToken), httpapi.WithAccessLog(slog.New(rh)))

	send := func(method, target, auth, body string) {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	before := time.Now()
	send("POST", "/plants", testToken, `{"id":1,"name":"Fern"}`)
	send("POST", "/plants?x=1", testToken, `{"id":1,"name":"Fern"}`)
	send("POST", "/plants", "wrong-"+testToken, `{"id":2,"name":"Fern"}`)
	send("GET", "/nowhere", "", "")
	after := time.Now()

	type line struct {
		Level slog.Level
		Msg   string
		PC    uintptr
		Attrs map[string]string
	}
	var got []line
	for _, r := range rh.records() {
		if r.Time.Before(before) || r.Time.After(after) {
			t.Errorf("line %q has time %v, outside the requests' %v to %v", r.Message, r.Time, before, after)
		}
		l := line{Level: r.Level, Msg: r.Message, PC: r.PC, Attrs: map[string]string{}}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "duration" {
				if d := a.Value.Duration(); d < 0 || d > after.Sub(before) {
					t.Errorf("duration %v is outside 0 to %v", d, after.Sub(before))
				}
				return true
			}
			l.Attrs[a.Key] = a.Value.String()
			return true
		})
		got = append(got, l)
	}
	want := []line{
		{slog.LevelInfo, "request", 0, map[string]string{"method": "POST", "path": "/plants", "status": "200"}},
		{slog.LevelInfo, "request", 0, map[string]string{"method": "POST", "path": "/plants", "status": "400", "error": "409"}},
		{slog.LevelInfo, "request", 0, map[string]string{"method": "POST", "path": "/plants", "status": "400", "error": "401"}},
		{slog.LevelInfo, "request", 0, map[string]string{"method": "GET", "path": "/nowhere", "status": "400", "error": "404"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("access lines mismatch (-want +got):\n%s", diff)
	}
}

func TestAccessLogFollowsLevel(t *testing.T) {
	rh := &recordingHandler{level: slog.LevelWarn}
	h := httpapi.New(plantstore.New(plantstore.NewMemoryStorage()),
		httpapi.WithTokens(testToken), httpapi.WithAccessLog(slog.New(rh)))
	req := httptest.NewRequest("POST", "/plants", strings.NewReader(`{"id":1,"name":"Fern"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("create answered %d, want 200", rec.Code)
	}
	if n := len(rh.records()); n != 0 {
		t.Errorf("a logger at level Warn got %d access lines, want none", n)
	}
}
