package httpapi_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, body := range []string{
		`{"id":30,"name":"c"}`, `{"id":-5,"name":"a","tag":""}`, `{"id":10,"name":"b","tag":"t"}`,
	} {
		e.do("POST", "/plants", nil, body).wantOK(t, "create %s", body)
	}
	empty, tagged := "", "t"
	all := []listedPlant{{-5, "a", &empty}, {10, "b", &tagged}, {30, "c", nil}}
	tests := []struct {
		query    string
		want     []listedPlant
		wantLink string
	}{
		{"", all, ""},
		{"?limit=2", all[:2], `<?limit=2&after=10>; rel="next"`},
		{"?limit=2&after=10", all[2:], ""},
		{"?after=-5", all[1:], ""},
		{"?after=30", []listedPlant{}, ""},
		{"?after=9223372036854775807", []listedPlant{}, ""},
		{"?limit=1000&unknown=x", all, ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, r := e.list(tt.query)
			r.wantOK(t, "GET /plants%s", tt.query)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("page mismatch (-want +got):\n%s", diff)
			}
			if link := r.header.Get("Link"); link != tt.wantLink {
				t.Errorf("Link = %q, want %q", link, tt.wantLink)
			}
		})
	}
	for _, query := range []string{
		"?limit=0", "?limit=-1", "?limit=1001", "?limit=abc", "?limit=1.5", "?limit=", "?limit=1&limit=2",
		"?limit=99999999999", "?after=x", "?after=9223372036854775808", "?after=",
		"?after=%2B1", "?after=01", "?after=-0", "?after=00", "?after=-01", "?after=1e3", "?after=%201",
		"?limit=1%zz", "?limit=2;after=20", "?after=1&%", "?unknown=%G0&limit=1",
	} {
		t.Run(query, func(t *testing.T) {
			e.do("GET", "/plants"+query, nil, "").wantError(t, 400, 400)
		})
	}
	for _, name := range []string{"limit", "after"} {
		we := e.do("GET", "/plants?"+name+"=1&"+name+"=2", nil, "").wantError(t, 400, 400)
		if want := "invalid " + name + ": given more than once"; we.Message != want {
			t.Errorf("message for a repeated %s = %q, want %q", name, we.Message, want)
		}
	}
}

// TestPlantByID reads and deletes plants by id, which only its canonical
// form names, and creates an id again after its delete.
func TestPlantByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, body := range []string{`{"id":-7,"name":"tagged","tag":""}`, `{"id":0,"name":"untagged"}`, `{"id":1,"name":"old","tag":"x"}`} {
		e.do("POST", "/plants", nil, body).wantOK(t, "create %s", body)
	}
	tests := []struct {
		method, path string
		headers      hdr
		wantStatus   int // of a success; 0 for the Error
		wantBody     string
		wantCode     int // of the Error
		reason       string
	}{
		{method: "GET", path: "/plants/-7", wantStatus: 200, wantBody: `{"id":-7,"name":"tagged","tag":""}`},
		{method: "GET", path: "/plants/0", wantStatus: 200, wantBody: `{"id":0,"name":"untagged"}`, reason: "an absent tag stays absent"},
		{method: "GET", path: "/plants/2", wantCode: 404},
		{method: "GET", path: "/plants/abc", wantCode: 400},
		{method: "GET", path: "/plants/+0", wantCode: 400, reason: "a sign other than minus is not canonical"},
		{method: "GET", path: "/plants/-0", wantCode: 400, reason: "minus zero is not canonical"},
		{method: "GET", path: "/plants/00", wantCode: 400, reason: "a leading zero is not canonical"},
		{method: "GET", path: "/plants/-07", wantCode: 400, reason: "a leading zero is not canonical"},
		{method: "GET", path: "/plants/9223372036854775808", wantCode: 400, reason: "past int64"},
		{method: "GET", path: "/plants/-", wantCode: 400},
		{method: "GET", path: "/plants/0", headers: noToken, wantCode: 401},
		{method: "DELETE", path: "/plants/00", wantCode: 400},
		{method: "GET", path: "/plants/0", wantStatus: 200, wantBody: `{"id":0,"name":"untagged"}`, reason: "after DELETE /plants/00"},
		{method: "DELETE", path: "/plants/1", wantStatus: 204},
		{method: "DELETE", path: "/plants/1", wantCode: 404},
		{method: "DELETE", path: "/plants/abc", wantCode: 400},
		{method: "DELETE", path: "/plants/9223372036854775808", wantCode: 400},
		{method: "DELETE", path: "/plants/2", headers: noToken, wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.headers, "")
			if tt.wantCode != 0 {
				r.wantError(t, 400, tt.wantCode)
			} else if r.status != tt.wantStatus || string(r.body) != tt.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q (%s)", tt.method, tt.path, r.status, r.body, tt.wantStatus, tt.wantBody, tt.reason)
			}
		})
	}
	if r := e.do("POST", "/plants", nil, `{"id":1,"name":"new"}`); r.status != 200 || string(r.body) != `{"name":"new"}` {
		t.Fatalf("create after delete = %d %s", r.status, r.body)
	}
}
