package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/plantstore/plantstore/server"
)

func TestProbeURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		addr    string
		tls     bool
		want    string
		wantErr error
	}{
		{"loopback", "127.0.0.1:8080", false, "http://127.0.0.1:8080/readyz", nil},
		{"every IPv4 address", "0.0.0.0:8080", false, "http://127.0.0.1:8080/readyz", nil},
		{"every address", ":8080", false, "http://127.0.0.1:8080/readyz", nil},
		{"every IPv6 address", "[::]:8080", false, "http://[::1]:8080/readyz", nil},
		{"a host name, over TLS", "plants.internal:443", true, "https://plants.internal:443/readyz", nil},
		{"a port picked at start", "127.0.0.1:0", false, "", server.ErrProbePort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := server.ProbeURL(tt.addr, "/readyz", tt.tls)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ProbeURL(%q) = %v, want %v", tt.addr, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ProbeURL(%q) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

// TestProbe probes a server over HTTPS with a certificate that names no
// loopback address, as a container's health check does, and a path it
// answers 503.
func TestProbe(t *testing.T) {
	t.Parallel()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte(" ready\n"))
	}))
	defer ts.Close()
	if body, err := server.Probe(context.Background(), ts.URL+"/readyz"); err != nil || string(body) != "ready" {
		t.Errorf("Probe(/readyz) = %q, %v; want \"ready\", nil", body, err)
	}
	if _, err := server.Probe(context.Background(), ts.URL+"/other"); err == nil {
		t.Error("Probe of a 503 = nil, want an error")
	}
}
