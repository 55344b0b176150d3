package httpapi_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
)

// TestOpenAPIKeepsGeneratedClientsWorking checks the properties of the
// document that clients generated from it depend on, which no validator
// checks: tags on every operation (generators file operations, and name
// their service classes, by tag: without one, under "default"); response
// schemas open to additions (ogen's decoders reject a property a closed
// schema does not name, so a property the server adds later would break
// every client already deployed); and no name a generator turns into an
// identifier that clashes with a language's own (a type named Error
// shadows TypeScript's global Error wherever it is imported). The clients
// themselves are generated and run against the binary by the module
// scripts/clients.
func TestOpenAPIKeepsGeneratedClientsWorking(t *testing.T) {
	t.Parallel()
	closed := false
	tests := []struct {
		name   string
		change func(doc *openapi3.T) // nil for the document as it is
		want   []string
	}{
		{name: "the document"},
		{name: "an operation without tags", change: func(d *openapi3.T) { d.Paths.Value("/plants/{id}").Get.Tags = nil },
			want: []string{"GET /plants/{id} has no tag"}},
		{name: "a tag not declared", change: func(d *openapi3.T) { d.Paths.Value("/readyz").Get.Tags = []string{"health"} },
			want: []string{`GET /readyz has the tag "health", which the document's tags do not declare with a description`}},
		{name: "a closed response schema", change: func(d *openapi3.T) {
			d.Components.Schemas["ListedPlant"].Value.AdditionalProperties.Has = &closed
		}, want: []string{"#/components/schemas/ListedPlant (in a response) is closed: a property added later fails the decoders of clients already generated"}},
		{name: "a schema named Error", change: func(d *openapi3.T) {
			c := d.Components
			c.Schemas["Error"], c.Responses["Error"] = c.Schemas["PlantStoreError"], c.Responses["PlantStoreError"]
			delete(c.Schemas, "PlantStoreError")
			delete(c.Responses, "PlantStoreError")
		}, want: []string{
			`the schema "Error" is also Dart's, Java's, Kotlin's, Swift's and TypeScript's Error`,
			`the response "Error" is also Dart's, Java's, Kotlin's, Swift's and TypeScript's Error`,
		}},
		{name: "an operation named as a global function", change: func(d *openapi3.T) { d.Paths.Value("/healthz").Get.OperationID = "fetch" },
			want: []string{`the operation "fetch" is also TypeScript's fetch`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI())
			if err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(doc)
			}
			if diff := cmp.Diff(tt.want, generatorProblems(doc)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// generatorProblems returns what in doc breaks or hinders clients
// generated from it, one line each.
func generatorProblems(doc *openapi3.T) []string {
	var problems []string

	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		declared[tag.Name] = tag.Description != ""
	}
	for _, op := range operations(doc) {
		if len(op.op.Tags) == 0 {
			problems = append(problems, op.where+" has no tag")
		}
		for _, tag := range op.op.Tags {
			if !declared[tag] {
				problems = append(problems, fmt.Sprintf("%s has the tag %q, which the document's tags do not declare with a description", op.where, tag))
			}
		}
	}

	for _, s := range responseSchemas(doc) {
		ap, up := s.schema.AdditionalProperties, s.schema.UnevaluatedProperties
		if ap.Has != nil && !*ap.Has || ap.Schema != nil || up.Has != nil && !*up.Has || up.Schema != nil {
			problems = append(problems, s.where+" (in a response) is closed: a property added later fails the decoders of clients already generated")
		}
	}

	type named struct{ kind, name string }
	var names []named
	add := func(kind string, keys []string) {
		for _, k := range keys {
			names = append(names, named{kind, k})
		}
	}
	c := doc.Components
	add("schema", mapKeys(c.Schemas))
	add("parameter", mapKeys(c.Parameters))
	add("header", mapKeys(c.Headers))
	add("request body", mapKeys(c.RequestBodies))
	add("response", mapKeys(c.Responses))
	add("security scheme", mapKeys(c.SecuritySchemes))
	for _, tag := range doc.Tags {
		add("tag", []string{tag.Name})
	}
	for _, op := range operations(doc) {
		add("operation", []string{op.op.OperationID})
	}
	for _, n := range names {
		// A generator keeps the name, or makes it a type name: "X-Request-Id"
		// becomes XRequestId, "plants" Plants.
		if langs := globals[n.name]; langs != nil {
			problems = append(problems, fmt.Sprintf("the %s %q is also %s %s", n.kind, n.name, langList(langs), n.name))
		} else if p := pascal(n.name); globals[p] != nil {
			problems = append(problems, fmt.Sprintf("the %s %q, as a type %s, is also %s %s", n.kind, n.name, p, langList(globals[p]), p))
		}
	}
	return problems
}

// mapKeys returns the keys of m in order.
func mapKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// pascal returns name as generators make a type name of it: the letters
// and digits of each word, each word capitalized.
func pascal(name string) string {
	var b strings.Builder
	upper := true
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		upper = false
	}
	return b.String()
}

// langList returns "A's, B's and C's".
func langList(langs []string) string {
	owned := make([]string, len(langs))
	for i, l := range langs {
		owned[i] = l + "'s"
	}
	if len(owned) == 1 {
		return owned[0]
	}
	return strings.Join(owned[:len(owned)-1], ", ") + " and " + owned[len(owned)-1]
}

// globals maps each name that a language declares in every file, or that
// a generator declares beside the types it makes, to the languages and
// generators that do, sorted. A generated type of that name shadows the
// language's own where it is imported (TypeScript), clashes with it, or
// is renamed by the generator, so that users of each language meet
// another name for the same schema.
var globals = func() map[string][]string {
	byLang := map[string]string{
		// ECMAScript's global objects, the web platform's and Node.js's
		// most used, TypeScript's utility types, and the global functions.
		"TypeScript": `Array ArrayBuffer BigInt Blob Boolean Buffer DataView Date Document Element Error
			EvalError Event EventTarget File FormData Function Headers Intl Iterable Iterator JSON Map Math
			Node Number Object Omit Partial Pick Promise Proxy RangeError Readonly Record ReferenceError
			Reflect RegExp Request Required Response Set Storage String Symbol SyntaxError TypeError URIError
			URL URLSearchParams WeakMap WeakRef WeakSet Window Worker
			alert atob btoa clearInterval clearTimeout close confirm decodeURI decodeURIComponent
			encodeURI encodeURIComponent eval fetch isFinite isNaN open parseFloat parseInt print prompt
			queueMicrotask setInterval setTimeout structuredClone`,
		// java.lang, imported in every file.
		"Java": `Boolean Byte Character Class Double Enum Error Exception Float Integer Iterable Long Math
			Module Number Object Override Package Process Record Runtime RuntimeException Short String
			System Thread Throwable Void`,
		// kotlin and kotlin.collections, imported in every file.
		"Kotlin": `Any Array Boolean Error Exception Int List Long Map Nothing Pair Result Set String Triple Unit`,
		// The Swift standard library and Foundation.
		"Swift": `Any AnyObject Array Bool Character Codable Data Date Decimal Decodable Dictionary Double
			Encodable Error Int Never Optional Result Set String Type URL UUID Void`,
		// dart:core, imported in every file.
		"Dart": `Comparable DateTime Duration Enum Error Exception Function Future Iterable List Map Match
			Never Null Object Pattern Record RegExp Set Stream Symbol Type Uri`,
		// Python's builtins that are class names.
		"Python": `BaseException Ellipsis Exception IOError KeyError NotImplemented OSError TypeError
			ValueError Warning`,
		// System, imported by nearly every C# file.
		"C#": `Action Attribute Console DateTime Enum Environment Exception Func Guid Math Object String
			Task TimeSpan Tuple Type Uri`,
		// The names the generators declare beside the types they make:
		// ogen's and oapi-codegen's clients and servers, and the runtime of
		// openapi-typescript-codegen and openapi-generator.
		"a generator": `ApiError ApiException ApiResponse BaseAPI Client ClientInterface ClientOption
			ClientWithResponses Configuration Handler HttpRequestDoer Invoker Labeler Operation Option
			RequestEditorFn RequiredError ResponseError Route SecuritySource Server ServerInterface ServerOption`,
	}
	m := map[string][]string{}
	for lang, names := range byLang {
		for _, n := range strings.Fields(names) {
			m[n] = append(m[n], lang)
		}
	}
	for _, langs := range m {
		slices.Sort(langs)
	}
	return m
}()

// An operation is an operation of the document, with where it is: "GET
// /plants", or "webhook plantAdded POST".
type operation struct {
	where string
	op    *openapi3.Operation
}

// operations returns every operation of doc, paths then webhooks, in order.
func operations(doc *openapi3.T) []operation {
	var ops []operation
	for _, path := range mapKeys(doc.Paths.Map()) {
		item := doc.Paths.Value(path)
		for _, method := range mapKeys(item.Operations()) {
			ops = append(ops, operation{method + " " + path, item.GetOperation(method)})
		}
	}
	for _, name := range mapKeys(doc.Webhooks) {
		item := doc.Webhooks[name]
		for _, method := range mapKeys(item.Operations()) {
			ops = append(ops, operation{"webhook " + name + " " + method, item.GetOperation(method)})
		}
	}
	return ops
}

// A schemaAt is a schema of doc, with where it is: its component's
// reference, or the operation and response that hold it.
type schemaAt struct {
	where  string
	schema *openapi3.Schema
}

// responseSchemas returns every schema that a response of doc holds, or
// that one of those holds in turn (items, properties, compositions), each
// once.
func responseSchemas(doc *openapi3.T) []schemaAt {
	seen := map[*openapi3.Schema]bool{}
	var out []schemaAt
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		if ref.Ref != "" {
			where = ref.Ref
		}
		s := ref.Value
		seen[s] = true
		out = append(out, schemaAt{where, s})
		walk(where+" items", s.Items)
		for _, name := range mapKeys(s.Properties) {
			walk(where+" property "+name, s.Properties[name])
		}
		walk(where+" additionalProperties", s.AdditionalProperties.Schema)
		for _, refs := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for i, r := range refs {
				walk(fmt.Sprintf("%s[%d]", where, i), r)
			}
		}
	}
	for _, op := range operations(doc) {
		if op.op.Responses == nil {
			continue
		}
		responses := op.op.Responses.Map()
		for _, status := range mapKeys(responses) {
			r := responses[status]
			if r.Value == nil {
				continue
			}
			for _, ct := range mapKeys(r.Value.Content) {
				walk(op.where+" "+status, r.Value.Content[ct].Schema)
			}
		}
	}
	return out
}
