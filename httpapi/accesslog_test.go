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
	"github.com/plantstore/plantstore/memstore"
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
	t.Parallel()
	rh := &recordingHandler{level: slog.LevelInfo}
	h := httpapi.New(plantstore.New(memstore.New()),
		httpapi.WithTokens(testToken), httpapi.WithAccessLog(slog.New(rh)))

	// send returns the request id the response carries.
	send := func(method, target, auth, requestID, body string) string {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		if requestID != "" {
			req.Header.Set("X-Request-Id", requestID)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Header().Get("X-Request-Id")
	}
	before := time.Now()
	ids := []string{
		send("POST", "/plants", testToken, "client-id-1", `{"id":1,"name":"Fern"}`),
		send("POST", "/plants?x=1", testToken, "", `{"id":1,"name":"Fern"}`),
		send("POST", "/plants", "wrong-"+testToken, "", `{"id":2,"name":"Fern"}`),
		send("GET", "/nowhere", "", "bad id", ""),
	}
	after := time.Now()
	if ids[0] != "client-id-1" {
		t.Errorf("X-Request-Id = %q, want the client's client-id-1", ids[0])
	}
	for _, id := range ids[1:] {
		if !generatedID.MatchString(id) {
			t.Errorf("X-Request-Id = %q, want a generated id of 32 hex digits", id)
		}
	}

	type line struct {
		Level slog.Level
		Msg   string
		Attrs map[string]string
	}
	var got []line
	for _, r := range rh.records() {
		if r.Time.Before(before) || r.Time.After(after) {
			t.Errorf("line %q has time %v, outside the requests' %v to %v", r.Message, r.Time, before, after)
		}
		l := line{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
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
		{slog.LevelInfo, "request", map[string]string{"method": "POST", "path": "/plants", "status": "200", "request_id": ids[0]}},
		{slog.LevelInfo, "request", map[string]string{"method": "POST", "path": "/plants", "status": "400", "error": "409", "request_id": ids[1]}},
		{slog.LevelInfo, "request", map[string]string{"method": "POST", "path": "/plants", "status": "400", "error": "401", "request_id": ids[2]}},
		{slog.LevelInfo, "request", map[string]string{"method": "GET", "path": "/nowhere", "status": "400", "error": "404", "request_id": ids[3]}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("access lines mismatch (-want +got):\n%s", diff)
	}
}

func TestAccessLogFollowsLevel(t *testing.T) {
	t.Parallel()
	rh := &recordingHandler{level: slog.LevelWarn}
	h := httpapi.New(plantstore.New(memstore.New()),
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
