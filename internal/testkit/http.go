package testkit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Get sends GET url through hc, with token as the bearer token unless it
// is "", and returns the answer's status, header and body, or an error
// when no complete answer came.
func Get(hc *http.Client, url, token string) (status int, header http.Header, body []byte, err error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return roundTrip(hc, req)
}

// roundTrip sends req through hc and returns the answer's status, header
// and whole body, or an error when no complete answer came.
func roundTrip(hc *http.Client, req *http.Request) (status int, header http.Header, body []byte, err error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	if body, err = io.ReadAll(resp.Body); err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

// ErrorCode returns the "error" member of body, an Error, or 0 when body
// is no Error.
func ErrorCode(body []byte) int {
	var e struct{ Error int }
	json.Unmarshal(body, &e)
	return e.Error
}

// Scrape GETs url as [Get] does and parses the answer, which must be a
// 200 in the Prometheus text format, into its metric families by name.
func Scrape(t testing.TB, hc *http.Client, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	status, header, body, err := Get(hc, url, token)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", url, status, body)
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}
