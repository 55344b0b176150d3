package apidocs_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/plantstore/plantstore/apidocs"
	"github.com/plantstore/plantstore/internal/testkit"
)

// chromium returns the Chromium to drive, or "" when there is none.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserLog records, from the browser's events, every request the page
// sends and every error it reports: console errors, uncaught exceptions,
// and the browser's own errors (a policy violation, a failed load).
type browserLog struct {
	mu       sync.Mutex
	requests []string
	errors   []string
	// csp is the Content-Security-Policy the browser received with /docs.
	csp string
}

func (l *browserLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.requests = append(l.requests, ev.Request.URL)
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument {
			for k, v := range ev.Response.Headers {
				if strings.EqualFold(k, "Content-Security-Policy") {
					l.csp = fmt.Sprint(v)
				}
			}
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			l.errors = append(l.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		l.errors = append(l.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError {
			l.errors = append(l.errors, fmt.Sprintf("%s error: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

func (l *browserLog) snapshot() (requests, errors []string, csp string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests), slices.Clone(l.errors), l.csp
}

// TestBrowserRendersReference loads /docs of a real handler in headless
// Chromium and checks that Swagger UI renders the API (the operation POST
// /plants and the NewPlant schema, with its properties), that the page
// sent no request outside its origin, and that the browser reported no
// error: no console error, no exception, no violation of the policy, no
// failed load. It leaves a screenshot of the page and says where.
func TestBrowserRendersReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	exe := chromium()
	if exe == "" {
		t.Skip("no Chromium to drive (chromium, chromium-browser or google-chrome on PATH, or /usr/bin/chromium): " +
			"install Debian's chromium (.ci/run does) to render /docs in a browser")
	}
	srv := newServer(t)
	origin, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
		// The network is the test's server and nothing else: no
		// background requests, updates or sync.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("mute-audio", true),
	)
	defer cancelAlloc()
	var log browserLog
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf), chromedp.WithListener(log.listen))
	defer cancelCtx()
	// The first run starts the browser, and lives as long as it: no
	// timeout on it, but on the steps after.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a busy machine is slow
	defer cancel()

	operations := `Array.from(document.querySelectorAll(".opblock")).map(b =>
		b.querySelector(".opblock-summary-method").textContent + " " +
		b.querySelector(".opblock-summary-path").dataset.path)`
	// The schemas section: for OpenAPI 3.1 Swagger UI draws each schema as
	// a JSON Schema 2020-12 article, titled by its name.
	schemas := `Array.from(document.querySelectorAll(
		".models article.json-schema-2020-12[data-json-schema-level='0'] > .json-schema-2020-12-head .json-schema-2020-12__title")).map(e => e.textContent)`
	newPlant := `//section[contains(@class, "models")]//article[@data-json-schema-level="0"]` +
		`[./div[contains(@class, "json-schema-2020-12-head")]//strong[contains(@class, "json-schema-2020-12__title")][text()="NewPlant"]]`
	var (
		ops, models []string
		schemaText  string
		screenshot  []byte
	)
	steps := []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"load /docs", chromedp.Navigate(srv.URL + "/docs")},
		{"wait for POST /plants", chromedp.WaitVisible(chromedp.CSS(`.opblock-post .opblock-summary-path[data-path="/plants"]`))},
		{"wait for the NewPlant schema", chromedp.WaitVisible(newPlant)},
		{"read the operations and schemas", chromedp.Func(func(ctx context.Context, t *chromedp.Target) (err error) {
			if ops, err = chromedp.Evaluate[[]string](operations)(ctx, t); err != nil {
				return err
			}
			models, err = chromedp.Evaluate[[]string](schemas)(ctx, t)
			return err
		})},
		// Open the schema, as a reader does, to see its properties.
		{"open NewPlant", chromedp.Click(newPlant+`/div/button[contains(@class, "json-schema-2020-12-accordion")]`, chromedp.NodeVisible)},
		{"wait for NewPlant's properties", chromedp.WaitVisible(newPlant + `/div[contains(@class, "json-schema-2020-12-body")][not(contains(@class, "--collapsed"))]//li[contains(@class, "json-schema-2020-12-property")]`)},
		{"read NewPlant", chromedp.Func(func(ctx context.Context, t *chromedp.Target) (err error) {
			schemaText, err = chromedp.Text(newPlant, chromedp.NodeVisible)(ctx, t)
			return err
		})},
		{"scroll to NewPlant", chromedp.ScrollIntoView(newPlant)},
		{"take a screenshot", chromedp.Func(func(ctx context.Context, t *chromedp.Target) (err error) {
			screenshot, err = chromedp.FullScreenshot(100)(ctx, t)
			return err
		})},
	}
	for _, step := range steps {
		if err := chromedp.Do(tctx, step.do); err != nil {
			requests, errs, _ := log.snapshot()
			t.Fatalf("%s: %v\nrequests: %q\nerrors: %q", step.what, err, requests, errs)
		}
	}

	// In $PLANTSTORE_TEST_ARTIFACTS when set, else in the system's
	// temporary directory, which outlives the test.
	dir := os.Getenv("PLANTSTORE_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, "plantstore-docs.png")
	if err := os.WriteFile(path, screenshot, 0o644); err != nil {
		t.Errorf("saving the screenshot: %v", err)
	} else {
		t.Logf("screenshot: %s", path)
	}

	if !slices.Contains(ops, "POST /plants") {
		t.Errorf("the page shows the operations %q, without POST /plants", ops)
	}
	if !slices.Contains(models, "NewPlant") {
		t.Errorf("the page shows the schemas %q, without NewPlant", models)
	}
	for _, want := range []string{"NewPlant", "id", "name", "tag", "integer", "int64", "string"} {
		if !strings.Contains(schemaText, want) {
			t.Errorf("the open NewPlant schema does not mention %q:\n%s", want, schemaText)
		}
	}

	requests, errs, csp := log.snapshot()
	if csp != apidocs.ContentSecurityPolicy {
		t.Errorf("the browser received /docs with Content-Security-Policy %q, want %q", csp, apidocs.ContentSecurityPolicy)
	}
	for _, e := range errs {
		t.Errorf("the browser reported: %s", e)
	}
	sawSpec := false
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil || u.Scheme == "data" {
			continue // data: URLs are the page's own images, in CSS
		}
		if u.Scheme != origin.Scheme || u.Host != origin.Host {
			t.Errorf("the page sent a request outside its origin %s: %s", srv.URL, r)
		}
		sawSpec = sawSpec || u.Path == "/openapi.json"
	}
	if !sawSpec {
		t.Errorf("the page never fetched /openapi.json; its requests: %q", requests)
	}
	t.Logf("%d requests, each to %s or a data: URL", len(requests), srv.URL)

	// The recorder hears what the policy blocks: an inline style added now
	// is refused, and reported.
	added, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`(() => {
		const s = document.createElement("style");
		s.textContent = "body { background: red }";
		document.head.appendChild(s);
		return s.isConnected;
	})()`))
	if err != nil || !added {
		t.Fatalf("adding an inline style: %v (added: %v)", err, added)
	}
	// Not hearing it means the policy is not enforced, or the test does
	// not hear the browser's errors.
	testkit.WaitUntil(t, 5*time.Second, "the violation of an inline style added to the page", func() bool {
		_, after, _ := log.snapshot()
		return len(after) > len(errs) && strings.Contains(strings.Join(after[len(errs):], "\n"), "Content Security Policy")
	})
}
