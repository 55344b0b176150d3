package apidocs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// ContentSecurityPolicy is the Content-Security-Policy of every answer of
// [Handler]: the page runs only the scripts and styles it is served with,
// fetches only from its own origin, and cannot be framed.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"style-src 'self'; font-src 'self'; base-uri 'none'; frame-ancestors 'none'"

// files are the page, its script, and Swagger UI's files as
// scripts/update-apidocs.sh fetched them, with their licences.
//
//go:embed index.html init.js swagger-ui
var files embed.FS

// Cache-Control of the page, which names the assets of this build, and of
// the assets, whose names change with their content.
var (
	noCache   = []string{"no-cache"}
	immutable = []string{"public, max-age=31536000, immutable"}
)

// An asset is one file the handler serves.
type asset struct {
	body        []byte
	contentType []string
	cache       []string
	etag        []string
	// gzipped is the body compressed, made on first use, or nil for a
	// file too small to gain from it.
	gzipped  func() []byte
	gzipETag []string
}

// page is the HTML page of GET /docs; assets are the files under /docs/,
// by the name the page gives them.
var page, assets = load()

// load reads the embedded files. The page's scripts and stylesheet are
// served under names that carry a hash of their content, so that browsers
// may keep them for good: a build with other files names them otherwise.
func load() (*asset, map[string]*asset) {
	html := string(mustRead("index.html"))
	assets := map[string]*asset{}
	for _, f := range []struct{ file, name string }{
		{"init.js", "init.js"},
		{"swagger-ui/swagger-ui-bundle.js", "swagger-ui-bundle.js"},
		{"swagger-ui/swagger-ui.css", "swagger-ui.css"},
	} {
		a := newAsset(mustRead(f.file), path.Ext(f.name), immutable)
		ext := path.Ext(f.name)
		name := strings.TrimSuffix(f.name, ext) + "." + strings.Trim(a.etag[0], `"`)[:12] + ext
		ref := `"docs/` + f.name + `"`
		if strings.Count(html, ref) != 1 {
			panic("apidocs: index.html refers to " + ref + " other than once")
		}
		html = strings.Replace(html, ref, `"docs/`+name+`"`, 1)
		assets[name] = a
	}
	// The licences, where a reader of the page or an auditor of the
	// binary finds them.
	for _, name := range []string{"LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"} {
		assets[name] = newAsset(mustRead("swagger-ui/"+name), ".txt", noCache)
	}
	return newAsset([]byte(html), ".html", noCache), assets
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("apidocs: " + err.Error())
	}
	return b
}

// contentTypes are the Content-Types of the files' extensions.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
}

func newAsset(body []byte, ext string, cache []string) *asset {
	sum := sha256.Sum256(body)
	etag := hex.EncodeToString(sum[:16])
	a := &asset{body: body, contentType: []string{contentTypes[ext]}, cache: cache, etag: []string{`"` + etag + `"`}}
	if len(body) >= 1<<10 {
		a.gzipped = sync.OnceValue(func() []byte { return compress(body) })
		a.gzipETag = []string{`"` + etag + `-gzip"`}
	}
	return a
}

func compress(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// Handler returns the handler of the API's reference page: GET /docs
// answers the page, and GET /docs/NAME the files it loads, HEAD too; any
// other path is answered 404, any other method 405. Every answer carries
// [ContentSecurityPolicy]. The page renders the OpenAPI document at
// openapi.json beside it: mount the handler where the API's handler
// serves /openapi.json, as [httpapi.WithDocs] does.
//
// The page is served with Cache-Control no-cache and its files, whose
// names change with their content, as immutable; both have ETags, and
// scripts and stylesheets are sent gzip-compressed to clients that accept
// it.
//
// [httpapi.WithDocs]: https://pkg.go.dev/github.com/plantstore/plantstore/httpapi#WithDocs
func Handler() http.Handler { return handler{} }

type handler struct{}

var (
	cspValue     = []string{ContentSecurityPolicy}
	nosniff      = []string{"nosniff"}
	gzipValue    = []string{"gzip"}
	varyEncoding = []string{"Accept-Encoding"}
	allowGetHead = []string{"GET, HEAD"}
)

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr["Content-Security-Policy"] = cspValue
	hdr["X-Content-Type-Options"] = nosniff
	var a *asset
	if r.URL.Path == "/docs" {
		a = page
	} else if name, ok := strings.CutPrefix(r.URL.Path, "/docs/"); ok {
		a = assets[name]
	}
	if a == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr["Allow"] = allowGetHead
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr["Content-Type"] = a.contentType
	hdr["Cache-Control"] = a.cache
	body, etag := a.body, a.etag
	if a.gzipped != nil {
		hdr["Vary"] = varyEncoding
		if acceptsGzip(r.Header["Accept-Encoding"]) {
			body, etag = a.gzipped(), a.gzipETag
			hdr["Content-Encoding"] = gzipValue
		}
	}
	hdr["Etag"] = etag
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether Accept-Encoding values accept gzip: they
// name it (or x-gzip) with a q-value other than 0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" {
				continue
			}
			q := strings.ReplaceAll(strings.ToLower(params), " ", "")
			if q, ok := strings.CutPrefix(q, "q="); ok && strings.Trim(q, "0.") == "" {
				continue // q=0, 0.0, 0.000: refused
			}
			return true
		}
	}
	return false
}
