package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// A stallingBody is a request body that yields what it holds and then
// fails, as a client does that announces a body and then stops sending.
type stallingBody struct{ r io.Reader }

func (s stallingBody) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestClaimedBodyDoesNotReserveMemory sends creates that claim a body of
// the full limit in Content-Length and deliver one byte of it: the handler
// must allocate for the byte it received, not for the claim.
//
// It does not run in parallel: it reads the allocations of the whole
// process, which other tests would add to.
func TestClaimedBodyDoesNotReserveMemory(t *testing.T) {
	const requests = 32
	h := newHandler(nil)
	send := func() *httptest.ResponseRecorder {
		req := newRequest("POST", "/plants", nil, stallingBody{strings.NewReader("{")})
		req.ContentLength = httpapi.DefaultMaxBodyBytes
		return serve(h, req)
	}
	send() // fills the pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range requests {
		if rec := send(); !strings.Contains(rec.Body.String(), `"error":400`) {
			t.Fatalf("a body cut short answered %d %s, want the Error with code 400", rec.Code, rec.Body)
		}
	}
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / requests
	t.Logf("%d bytes allocated per request claiming %d body bytes", perRequest, httpapi.DefaultMaxBodyBytes)
	if perRequest > 64<<10 {
		t.Errorf("each request claiming %d body bytes and sending 1 allocated %d bytes, want at most %d",
			httpapi.DefaultMaxBodyBytes, perRequest, 64<<10)
	}
}

// A countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestBodyLimitWhileGrowing sends bodies around the limit, of a declared
// length and of none: the buffer grows as they arrive, a body at the
// limit is read whole, and one past it is answered 413, and the connection
// closed, with no more than one byte past the limit read, and none of a body
// declared past the limit.
func TestBodyLimitWhileGrowing(t *testing.T) {
	t.Parallel()
	const limit = 300 << 10
	ps := plantstore.New(memstore.New())
	h := httpapi.New(ps, httpapi.WithTokens(testToken), httpapi.WithMaxBodyBytes(limit), discardLog)
	body := func(id, size int) string {
		s := fmt.Sprintf(`{"id":%d,"name":"`, id)
		return s + strings.Repeat("a", size-len(s)-2) + `"}`
	}
	tests := []struct {
		name     string
		body     string
		declared bool
		wantCode int // of the Error, or 0 for a 200
	}{
		{"at the limit, declared", body(1, limit), true, 0},
		{"at the limit, chunked", body(2, limit), false, 0},
		{"one byte past the limit, chunked", body(3, limit+1), false, 413},
		{"far past the limit, chunked", body(4, 4*limit), false, 413},
		{"small, chunked", body(5, 100), false, 0},
		{"past the pooled buffer, declared", body(6, 70<<10), true, 0},
		{"far past the limit, declared", body(7, 4*limit), true, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(tt.body)}
			req := newRequest("POST", "/plants", nil, cr)
			req.ContentLength = -1
			if tt.declared {
				req.ContentLength = int64(len(tt.body))
			}
			rec := serve(h, req)
			if tt.wantCode == 0 {
				recorded(rec).wantOK(t, "a body of %d bytes", len(tt.body))
			} else {
				recorded(rec).wantError(t, 400, tt.wantCode)
			}
			if cr.n > limit+1 {
				t.Errorf("read %d body bytes, want at most %d", cr.n, limit+1)
			}
			if tt.wantCode != 0 && rec.Header().Get("Connection") != "close" {
				t.Errorf("a 413 leaves the connection open, with the unread body on it to be taken for the next request")
			}
			if tt.wantCode != 0 && tt.declared && cr.n != 0 {
				t.Errorf("read %d bytes of a body declared past the limit, want it refused unread", cr.n)
			}
		})
	}
	if diff := cmp.Diff([]int64{1, 2, 5, 6}, storedIDs(t, ps)); diff != "" {
		t.Errorf("stored plants (-want +got): a body refused 413 must store nothing\n%s", diff)
	}
}

// A recordingStorage is memory storage that notes the limit of every List.
type recordingStorage struct {
	*memstore.Store
	mu     sync.Mutex
	limits []int
}

func (s *recordingStorage) List(ctx context.Context, from int64, limit int) ([]plantstore.Plant, error) {
	s.mu.Lock()
	s.limits = append(s.limits, limit)
	s.mu.Unlock()
	return s.Store.List(ctx, from, limit)
}

// TestListPageBytes lists plants whose pages would be larger than the
// byte bound, or than the limit: every page keeps within the bound, or
// holds a single plant when that alone is larger; a page that stopped
// early links to the rest; the links lead through every plant once, in
// order; and the storage is never asked for more than 64 plants at a time.
func TestListPageBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		plants    int
		nameBytes int
		maxPage   int
		wantPages int // 0 when not checked
	}{
		{name: "many plants per page", plants: 300, nameBytes: 10 << 10, maxPage: 64 << 10},
		{name: "one plant over the bound", plants: 5, nameBytes: 2 << 10, maxPage: 1 << 10, wantPages: 5},
		{name: "all in one page", plants: 150, nameBytes: 10, maxPage: 1 << 20, wantPages: 1},
		{name: "more than the limit", plants: 2500, nameBytes: 1, maxPage: 1 << 20, wantPages: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &recordingStorage{Store: memstore.New()}
			e := newEnv(t, s, httpapi.WithMaxPageBytes(tt.maxPage))
			name := strings.Repeat("x", tt.nameBytes)
			for id := range tt.plants {
				if err := s.Create(t.Context(), plantstore.Plant{ID: int64(id), Name: name}); err != nil {
					t.Fatal(err)
				}
			}
			seen, pages := 0, 0
			for query := "?limit=1000"; ; {
				page, r := e.list(query)
				pages++
				if r.status != 200 {
					t.Fatalf("GET /plants%s = %d %s", query, r.status, r.body)
				}
				if len(page) > 1 && len(r.body) > tt.maxPage {
					t.Errorf("GET /plants%s: %d plants in %d bytes, want at most %d bytes", query, len(page), len(r.body), tt.maxPage)
				}
				for _, p := range page {
					if p.ID != int64(seen) || p.Name != name {
						t.Fatalf("GET /plants%s lists plant %d, want %d", query, p.ID, seen)
					}
					seen++
				}
				link := r.header.Get("Link")
				if seen < tt.plants && (len(page) == 0 || link == "") {
					t.Fatalf("GET /plants%s: %d plants, Link %q, after %d of %d: want a plant and a Link", query, len(page), link, seen, tt.plants)
				}
				if link == "" {
					break
				}
				if want := fmt.Sprintf(`<?limit=1000&after=%d>; rel="next"`, seen-1); link != want {
					t.Fatalf("Link = %q, want %q", link, want)
				}
				query = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			}
			if seen != tt.plants {
				t.Errorf("paging saw %d plants, want %d", seen, tt.plants)
			}
			if tt.wantPages != 0 && pages != tt.wantPages {
				t.Errorf("paging took %d pages, want %d", pages, tt.wantPages)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, l := range s.limits {
				if l > 64 {
					t.Errorf("the storage was asked for %d plants at once, want at most 64 (limits asked: %v)", l, s.limits)
					break
				}
			}
		})
	}
}

// TestHeaderBytes sends raw requests of exactly the header limit and of
// one byte more: the first is served, the second answered with the Error
// for 431, and the count of header bytes is the one on the wire.
func TestHeaderBytes(t *testing.T) {
	t.Parallel()
	const limit = 1024
	srv := httptest.NewServer(newHandler(nil, httpapi.WithMaxHeaderBytes(limit), httpapi.WithConventionalStatus()))
	t.Cleanup(srv.Close)
	request := func(size int) string {
		head := "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nX-Pad: "
		return head + strings.Repeat("p", size-len(head)-4) + "\r\n\r\n"
	}
	tests := []struct {
		size       int
		wantStatus int
		wantBody   string
	}{
		{limit, 200, `{"status":"ok"}`},
		{limit + 1, 431, fmt.Sprintf(`{"error":431,"message":"request headers exceed the limit of %d bytes"}`, limit)},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			req := request(tt.size)
			if len(req) != tt.size {
				t.Fatalf("request of %d bytes, want %d", len(req), tt.size)
			}
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			want := fmt.Sprintf("%d application/json %s", tt.wantStatus, tt.wantBody)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}
