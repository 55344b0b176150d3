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

func TestWorkingWorksThenAnswers(t *testing.T) {
	const d = 20 * time.Millisecond
	var served bool
	h := floor.Working(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = true
		w.WriteHeader(http.StatusTeapot)
	}), d)
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{}`))
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	if took := time.Since(start); took < d {
		t.Errorf("Working(h, %v) answered after %v, want at least %v", d, took, d)
	}
	if !served || rec.Code != http.StatusTeapot {
		t.Errorf("inner handler served = %v, status %d; want true, %d", served, rec.Code, http.StatusTeapot)
	}
}
