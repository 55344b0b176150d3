package httpapi

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkRequestID measures what giving a request its id costs, with an
// id generated and with the client's kept.
func BenchmarkRequestID(b *testing.B) {
	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"generated", nil},
		{"client", []string{"0b6c4a3e-6a3f-4b8e-9d55-2f0c1d7a9e11"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			if tt.header != nil {
				req.Header[requestIDHeader] = tt.header
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				if r := withRequestID(w, req); RequestID(r.Context()) == "" {
					b.Fatal("no request id")
				}
			}
		})
	}
}
