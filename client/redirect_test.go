package client_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/memstore"
)

// A recorder serves the real handler where a redirect leads, and counts
// the requests that reached it: all of them, those that carried an
// Authorization header, and those that carried a body.
type recorder struct {
	h                           http.Handler
	requests, withToken, bodies atomic.Int64
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.requests.Add(1)
	if r.Header.Get("Authorization") != "" {
		rec.withToken.Add(1)
	}
	b, _ := io.ReadAll(r.Body)
	if len(b) > 0 {
		rec.bodies.Add(1)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	rec.h.ServeHTTP(w, r)
}

// followAll is the CheckRedirect of a caller's http.Client that follows
// every redirect and carries the first request's credentials along, as a
// program may do to keep a session across hosts.
func followAll(req *http.Request, via []*http.Request) error {
	if a := via[0].Header.Values("Authorization"); a != nil {
		req.Header["Authorization"] = a
	}
	return nil
}

// TestRedirectsRefused answers every call with a redirect, to another
// origin or to the same one, and checks that nothing reaches where it
// leads: not the token, not the body, not a request.
//
// It does not run in parallel: its clients use http.DefaultTransport,
// whose idle connections every other test's httptest.Server closes when
// it stops, breaking a request that was about to reuse one.
func TestRedirectsRefused(t *testing.T) {
	// Each destination returns where the redirects of srv, which serves rec
	// at "/", lead to.
	otherServer := func(t *testing.T, _ *httptest.Server, rec *recorder) string {
		other, _ := serve(t, rec)
		return other.URL
	}
	destinations := []struct {
		name   string
		tls    bool // srv is an https server
		target func(t *testing.T, srv *httptest.Server, rec *recorder) string
		reason string
	}{
		{name: "another port", target: otherServer,
			reason: "an origin is its scheme, host and port: another port may be another program"},
		{name: "another scheme", tls: true, target: otherServer, reason: "the token must not travel in clear text"},
		{name: "another host name", target: func(t *testing.T, srv *httptest.Server, _ *recorder) string {
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			return "http://localhost:" + u.Port()
		}, reason: "the same listener, but net/http keeps the body of a 307 or 308 for another host name"},
		{name: "same origin", target: func(_ *testing.T, srv *httptest.Server, _ *recorder) string {
			return srv.URL
		}, reason: "the API has no redirects: the client follows none, not even on its own server"},
	}
	// Each client returns the *http.Client a caller gives the client, or
	// nil for none.
	clients := []struct {
		name string
		hc   func(srv *httptest.Server) *http.Client
	}{
		{"default policy", func(srv *httptest.Server) *http.Client {
			if srv.TLS != nil {
				return srv.Client() // trusts srv's certificate, follows up to 10 redirects
			}
			return nil
		}},
		{"follows all", func(srv *httptest.Server) *http.Client {
			hc := &http.Client{CheckRedirect: followAll}
			if srv.TLS != nil {
				hc.Transport = srv.Client().Transport
			}
			return hc
		}},
	}
	calls := []struct {
		name  string
		call  op
		write bool
	}{
		{"create", create(2, "Fern"), true}, {"read", read(1), false}, {"delete", del(1), true},
		{"list", list(0), false}, {"ping", ping, false},
	}
	statuses := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

	for _, d := range destinations {
		for _, cl := range clients {
			for _, status := range statuses {
				for _, call := range calls {
					t.Run(d.name+"/"+cl.name+"/"+strconv.Itoa(status)+"/"+call.name, func(t *testing.T) {
						ms := memstore.New()
						if err := ms.Create(t.Context(), plantstore.Plant{ID: 1, Name: "Monstera"}); err != nil {
							t.Fatal(err)
						}
						rec := &recorder{h: newHandler(ms)}
						var target atomic.Pointer[string]
						mux := http.NewServeMux()
						mux.HandleFunc("/from/", func(w http.ResponseWriter, r *http.Request) {
							io.Copy(io.Discard, r.Body)
							w.Header().Set("Location", *target.Load()+strings.TrimPrefix(r.URL.RequestURI(), "/from"))
							w.WriteHeader(status)
						})
						mux.Handle("/", rec)
						srv := httptest.NewUnstartedServer(mux)
						if d.tls {
							srv.StartTLS()
						} else {
							srv.Start()
						}
						t.Cleanup(srv.Close)
						to := d.target(t, srv, rec)
						target.Store(&to)

						opts := []client.Option{client.WithRetry(client.RetryPolicy{MaxAttempts: 3})}
						if hc := cl.hc(srv); hc != nil {
							opts = append(opts, client.WithHTTPClient(hc))
						}
						c := newClient(t, srv.URL+"/from", opts...)
						err := call.call(t.Context(), c)

						wantCount(t, &rec.withToken, 0, "requests to "+to+" carrying the token ("+d.reason+")")
						wantCount(t, &rec.bodies, 0, "requests to "+to+" carrying a body ("+d.reason+")")
						wantCount(t, &rec.requests, 0, "requests reaching "+to+": the client follows no redirect")
						checkProtocolError(t, err, status, call.write)
					})
				}
			}
		}
	}
}
