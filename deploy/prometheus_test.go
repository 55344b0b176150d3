package deploy_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
)

const (
	alertsFile     = "prometheus/alerts.yml"
	alertTestsFile = "prometheus/alerts_test.yml"
	dashboardFile  = "grafana/plantstore.json"
)

// TestPrometheusRules checks the alerting rules and the Grafana dashboard:
// promtool accepts the rules and passes their unit tests, every query of
// the dashboard parses, and every metric, label and label value that the
// rules and the dashboard name exists in a real scrape of the server, so
// that renaming a metric breaks this test rather than a dashboard in
// production. The promtool parts skip, saying so, without promtool.
func TestPrometheusRules(t *testing.T) {
	t.Parallel()
	queries := append(alertQueries(t), dashboardQueries(t)...)
	if len(queries) < 20 {
		t.Fatalf("found %d queries in %s and %s, want every one", len(queries), alertsFile, dashboardFile)
	}

	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("SKIPPING: promtool is not installed (Debian: apt-get install prometheus; .ci/run installs it)")
		}
		run := func(args ...string) string {
			t.Helper()
			out, err := exec.Command(promtool, args...).CombinedOutput()
			if err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		t.Logf("promtool check rules: %s", strings.TrimSpace(run("check", "rules", alertsFile)))
		t.Logf("promtool test rules: %s", strings.TrimSpace(run("test", "rules", alertTestsFile)))

		// The dashboard's queries, as recording rules, for promtool to parse.
		var rules []map[string]string
		for i, q := range queries {
			if q.dashboard && !q.variable {
				rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard_query_%d", i), "expr": q.promQL(t)})
			}
		}
		b, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "dashboard-queries.yml") // JSON is YAML
		testkit.WriteFile(t, file, string(b))
		t.Logf("the dashboard's queries: %s", strings.TrimSpace(run("check", "rules", file)))
	})

	t.Run("metrics exist", func(t *testing.T) {
		families := scrapeServer(t)
		used := map[string]bool{}
		for _, q := range queries {
			for _, ref := range q.references() {
				fam, ok := families.bySample[ref.name]
				if !ok {
					if !scraperMade[ref.name] {
						t.Errorf("%s uses %s, which the server does not export", q.where, ref.name)
					}
					continue
				}
				used[fam.name] = true
				for _, m := range ref.matchers {
					if m.label == "job" || m.label == "instance" {
						continue // set by Prometheus
					}
					values, ok := fam.labels[m.label]
					if !ok {
						t.Errorf("%s selects %s by %s, a label it does not have (%s)", q.where, ref.name, m.label, slices.Sorted(maps.Keys(fam.labels)))
						continue
					}
					// Series of an Error code appear with its first answer, so
					// a scrape need not show the codes an alert expects.
					if m.op == "=" && m.value != "" && m.label != "error" && !values[m.value] {
						t.Errorf("%s selects %s{%s=%q}, a value no series has (%s)", q.where, ref.name, m.label, m.value, slices.Sorted(maps.Keys(values)))
					}
				}
			}
		}
		for name := range families.byName {
			if strings.HasPrefix(name, "plantstore_") && !used[name] {
				t.Errorf("neither the alerts nor the dashboard use %s", name)
			}
		}
	})
}

// scraperMade are the series Prometheus makes for each target it scrapes.
var scraperMade = map[string]bool{"up": true}

// A query is a PromQL expression of an alert or of the dashboard.
type query struct {
	where     string // for failure messages
	expr      string
	dashboard bool
	variable  bool // a template variable's query, not PromQL
}

// alertQueries returns the expr of every rule in alerts.yml: a line
// "expr: …", or "expr: |" and the lines indented under it.
func alertQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var (
		queries []query
		alert   string
		block   *query
		indent  int
	)
	for line := range strings.Lines(string(b)) {
		trimmed := strings.TrimSpace(line)
		depth := len(line) - len(strings.TrimLeft(line, " "))
		if block != nil {
			if trimmed == "" || depth > indent {
				block.expr += " " + trimmed
				continue
			}
			queries = append(queries, *block)
			block = nil
		}
		if name, ok := strings.CutPrefix(trimmed, "- alert: "); ok {
			alert = name
		}
		expr, ok := strings.CutPrefix(trimmed, "expr:")
		if !ok {
			continue
		}
		q := query{where: alertsFile + ": " + alert, expr: strings.TrimSpace(expr)}
		if q.expr == "|" || q.expr == "|-" || q.expr == ">" || q.expr == ">-" {
			q.expr, block, indent = "", &q, depth
			continue
		}
		queries = append(queries, q)
	}
	if block != nil {
		queries = append(queries, *block)
	}
	return queries
}

// dashboardQueries returns the expr of every target of every panel of the
// dashboard, and the queries of its template variables.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SchemaVersion int
		Templating    struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage
				Datasource *struct{ Type, UID string }
			}
		}
		Panels []struct {
			ID         int
			Title      string
			Type       string
			Datasource *struct{ Type, UID string }
			Targets    []struct {
				Expr       string
				Datasource *struct{ Type, UID string }
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.SchemaVersion < 39 {
		t.Errorf("%s has schemaVersion %d, want that of a current Grafana", dashboardFile, d.SchemaVersion)
	}
	const ds = "${DS_PROMETHEUS}"
	var queries []query
	variables := map[string]bool{}
	for _, v := range d.Templating.List {
		variables[v.Name] = true
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil || q.Query == "" {
			t.Errorf("%s: variable %s has no query (%s)", dashboardFile, v.Name, v.Query)
		}
		if v.Datasource == nil || v.Datasource.UID != ds {
			t.Errorf("%s: variable %s does not query %s", dashboardFile, v.Name, ds)
		}
		queries = append(queries, query{where: dashboardFile + ": variable " + v.Name, expr: q.Query, dashboard: true, variable: true})
	}
	if !variables["DS_PROMETHEUS"] || !variables["instance"] {
		t.Errorf("%s: variables %v, want DS_PROMETHEUS and instance", dashboardFile, slices.Sorted(maps.Keys(variables)))
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("%s: two panels have the id %d", dashboardFile, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != ds || len(p.Targets) == 0 {
			t.Errorf("%s: panel %q does not query %s", dashboardFile, p.Title, ds)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("%s: a query of panel %q does not go to %s", dashboardFile, p.Title, ds)
			}
			queries = append(queries, query{where: fmt.Sprintf("%s: panel %q", dashboardFile, p.Title), expr: tg.Expr, dashboard: true})
		}
	}
	return queries
}

// grafanaVariables are what the dashboard's queries may use of Grafana's
// variables, and a value that stands for each in a check of the syntax.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".+")

// promQL returns the query with Grafana's variables replaced by values, as
// PromQL that Prometheus could run.
func (q query) promQL(t *testing.T) string {
	t.Helper()
	s := grafanaVariables.Replace(q.expr)
	if strings.Contains(s, "$") {
		t.Errorf("%s: a variable other than $__rate_interval and $instance: %s", q.where, q.expr)
	}
	return s
}

// A reference is a metric name in a query, with the label matchers of its
// selector.
type reference struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	selector      = regexp.MustCompile(`\{[^{}]*\}`)
	rangeOrGroup  = regexp.MustCompile(`\[[^\]]*\]|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier    = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?`)
	withSelector  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^{}]*)\}`)
	matcherRE     = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	promQLWords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// references returns the metrics the query names: the identifiers left
// once strings, selectors, ranges, groupings, function calls and keywords
// are taken out.
func (q query) references() []reference {
	matchers := map[string][]matcher{}
	for _, m := range withSelector.FindAllStringSubmatch(q.expr, -1) {
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			matchers[m[1]] = append(matchers[m[1]], matcher{mm[1], mm[2], mm[3]})
		}
	}
	s := stringLiteral.ReplaceAllString(q.expr, `""`)
	s = selector.ReplaceAllString(s, " ")
	s = rangeOrGroup.ReplaceAllString(s, " ")
	if q.variable {
		// label_values(metric, label): the metric only.
		s, _, _ = strings.Cut(strings.TrimPrefix(s, "label_values("), ",")
	}
	var refs []reference
	for _, id := range identifier.FindAllStringSubmatch(s, -1) {
		if id[2] != "" || promQLWords[id[1]] {
			continue // a function or a keyword
		}
		refs = append(refs, reference{name: id[1], matchers: matchers[id[1]]})
	}
	return refs
}

// A family is a metric family of a scrape: its name and, for each label,
// the values its series have.
type family struct {
	name   string
	labels map[string]map[string]bool
}

// families indexes a scrape's families by name and by the names of their
// samples (a histogram's _bucket, _sum and _count).
type families struct {
	byName   map[string]*family
	bySample map[string]*family
}

// scrapeServer starts the server on a SQLite file with a webhook
// subscriber, so that the storage and webhook metrics are there too, sends
// it a create, and returns what its /metrics shows.
func scrapeServer(t *testing.T) families {
	t.Helper()
	bin := testkit.Build(t, "../cmd/plantstore")
	delivered := make(chan struct{}, 1)
	subscriber := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(subscriber.Close)
	dir := t.TempDir()
	// The token in a file, so that the series of each thing reloaded
	// appear (what="tokens").
	tokens := filepath.Join(dir, "tokens")
	testkit.WriteFile(t, tokens, "prometheus-test\n")
	p := testkit.Start(t, bin, testkit.Env(
		"PLANTSTORE_WEBHOOK_SECRET=a-webhook-secret-of-at-least-24-bytes",
	), "-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "plants.db"), "-webhook", subscriber.URL+"/hook", "-token-file", tokens)

	if status, _, body, err := testkit.Post(t.Context(), http.DefaultClient, p.URL, "prometheus-test", `{"id":1,"name":"Fern"}`); err != nil || status != http.StatusOK {
		t.Fatalf("create = %d %s, %v; want 200", status, body, err)
	}
	<-delivered

	// /metrics on -addr needs the token.
	mfs := testkit.Scrape(t, http.DefaultClient, p.URL+"/metrics", "prometheus-test")
	f := families{byName: map[string]*family{}, bySample: map[string]*family{}}
	for name, mf := range mfs {
		fam := &family{name: name, labels: map[string]map[string]bool{}}
		f.byName[name] = fam
		samples := []string{name}
		switch mf.GetType().String() {
		case "HISTOGRAM", "GAUGE_HISTOGRAM":
			samples = []string{name + "_bucket", name + "_sum", name + "_count"}
			fam.labels["le"] = map[string]bool{}
		case "SUMMARY":
			samples = append(samples, name+"_sum", name+"_count")
			fam.labels["quantile"] = map[string]bool{}
		}
		for _, s := range samples {
			f.bySample[s] = fam
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if fam.labels[lp.GetName()] == nil {
					fam.labels[lp.GetName()] = map[string]bool{}
				}
				fam.labels[lp.GetName()][lp.GetValue()] = true
			}
		}
	}
	return f
}
