package floor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/floor"
)

func TestHandler(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{name: "plant", body: `{"id":1,"name":"Monstera"}`},
		{name: "not JSON", body: `not json at all`},
		{name: "empty", body: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(tt.body))
			rec := httptest.NewRecorder()
			floor.Handler().ServeHTTP(rec, req)

			type answer struct {
				Status      int
				ContentType string
				Body        string
				Unread      int
			}
			unread, _ := io.Copy(io.Discard, req.Body)
			want := answer{Status: http.StatusOK, ContentType: "application/json", Body: `{"name":"x"}`}
			got := answer{
				Status:      rec.Code,
				ContentType: rec.Header().Get("Content-Type"),
				Body:        rec.Body.String(),
				Unread:      int(unread),
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorkingHandsOn checks that Working serves the request with the
// handler it wraps; BenchmarkWorking shows the time it adds, which a test
// could only assert against a clock the machine's load moves.
func TestWorkingHandsOn(t *testing.T) {
	var served bool
	h := floor.Working(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = true
		w.WriteHeader(http.StatusTeapot)
	}), time.Millisecond)
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{}`))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !served || rec.Code != http.StatusTeapot {
		t.Errorf("inner handler served = %v, status %d; want true, %d", served, rec.Code, http.StatusTeapot)
	}
}

// BenchmarkWorking reports what Working(Handler(), 100µs) costs a request:
// its ns/op less BenchmarkHandler's is at least 100µs, more on a busy
// machine, since Working spins on the wall clock.
func BenchmarkWorking(b *testing.B) {
	benchmarkHandler(b, floor.Working(floor.Handler(), 100*time.Microsecond))
}

func BenchmarkHandler(b *testing.B) {
	benchmarkHandler(b, floor.Handler())
}

func benchmarkHandler(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"Monstera"}`))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
