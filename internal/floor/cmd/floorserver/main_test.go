package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"floorserver", "-addr", "127.0.0.1:0"}, func(string) string { return "" }, pw, io.Discard)
		pw.Close()
	}()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: %v", err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line = %q, want %q", line, "listening on http://127.0.0.1:PORT")
	}
	go io.Copy(io.Discard, pr)

	resp, err := http.Post(base+"/plants", "application/json", strings.NewReader(`{"id":1,"name":"Monstera"}`))
	if err != nil {
		t.Fatalf("POST /plants: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if diff := cmp.Diff(`{"name":"x"}`, string(got)); resp.StatusCode != http.StatusOK || diff != "" {
		t.Errorf("POST /plants = %d, body mismatch (-want +got):\n%s", resp.StatusCode, diff)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run returned %v after cancellation, want nil", err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	err := run(t.Context(), []string{"floorserver", "-bogus"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil {
		t.Error("run with an unknown flag returned nil, want an error")
	}
}
