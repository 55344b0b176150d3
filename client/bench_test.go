package client_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/memstore"
)

// loopback serves the real handler over memory storage on a loopback
// server and returns a client of it.
func loopback(b *testing.B) (*client.Client, *memstore.Store, string) {
	b.Helper()
	ms := memstore.New()
	srv, _ := serve(b, newHandler(ms))
	return newClient(b, srv.URL), ms, srv.URL
}

func BenchmarkCreate(b *testing.B) {
	c, _, _ := loopback(b)
	b.ReportAllocs()
	var id int64
	for b.Loop() {
		id++
		if _, err := c.Create(b.Context(), plantstore.NewPlant{ID: id, Name: "Monstera", Tag: "indoor", HasTag: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateFloor makes BenchmarkCreate's requests with net/http
// alone: what the client adds is the difference.
func BenchmarkCreateFloor(b *testing.B) {
	_, _, url := loopback(b)
	b.ReportAllocs()
	var id int64
	for b.Loop() {
		id++
		req, err := http.NewRequestWithContext(b.Context(), "POST", url+"/plants",
			strings.NewReader(`{"id":`+strconv.FormatInt(id, 10)+`,"name":"Monstera","tag":"indoor"}`))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

func BenchmarkPlant(b *testing.B) {
	c, ms, _ := loopback(b)
	if err := ms.Create(b.Context(), plantstore.Plant{ID: 1, Name: "Monstera"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Plant(b.Context(), 1); err != nil {
			b.Fatal(err)
		}
	}
}
