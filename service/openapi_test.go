package service

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIMatchesHandlers: the served document describes exactly the
// registered endpoints, with the roles each admits, and every operation
// documents its success and auth failures.
func TestOpenAPIMatchesHandlers(t *testing.T) {
	ts := newTestServer(t)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Roles     []Role                     `json:"x-dpal-roles"`
			Responses map[string]json.RawMessage `json:"responses"`
			Security  *[]any                     `json:"security"`
		} `json:"paths"`
	}
	ts.mustDo(200, "", "GET", "/openapi.json", "", &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, r := range ts.srv.Routes() {
		method, path := documentedPath(r.Pattern)
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("%s is served but not documented (as %s)", r.Pattern, path)
			continue
		}
		delete(documented, method+" "+path)
		if !slices.Equal(op.Roles, r.Roles) && !(len(op.Roles) == 0 && len(r.Roles) == 0) {
			t.Errorf("%s: documented roles %v, served %v", r.Pattern, op.Roles, r.Roles)
		}
		if len(r.Roles) > 0 && (op.Responses["401"] == nil || op.Responses["429"] == nil) {
			t.Errorf("%s: 401 and 429 undocumented", r.Pattern)
		}
		// 403 is possible only if some role is refused (admin never is).
		refuses := slices.ContainsFunc(Roles, func(role Role) bool { return !admits(role, r.Roles) })
		if len(r.Roles) > 0 && refuses != (op.Responses["403"] != nil) {
			t.Errorf("%s: 403 documented %v, possible %v", r.Pattern, op.Responses["403"] != nil, refuses)
		}
		if len(r.Roles) == 0 && (op.Security == nil || len(*op.Security) != 0) {
			t.Errorf("%s needs no token, but the document does not say so", r.Pattern)
		}
	}
	for p := range documented {
		t.Errorf("%s is documented but not served", p)
	}
}

// documentedPath is the method and the OpenAPI path of a net/http
// pattern: "/{$}" is the exact path "/", and a subtree pattern ("/ui/",
// every path below it) ends in a path parameter, "/ui/{file}".
func documentedPath(pattern string) (string, string) {
	method, path, _ := strings.Cut(pattern, " ")
	path = strings.TrimSuffix(path, "{$}")
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		path += "{file}"
	}
	return method, path
}

// TestOpenAPITyped: every operation has a unique operationId, every JSON
// request and answer a named schema (a $ref into components), no schema
// anywhere is a bare object whose shape is left unsaid, and every $ref
// resolves.
func TestOpenAPITyped(t *testing.T) {
	doc := loadOpenAPI(t)
	ids := map[string]string{}
	for _, o := range doc.operations() {
		at := strings.ToUpper(o.method) + " " + o.path
		id, _ := o.op["operationId"].(string)
		switch {
		case id == "":
			t.Errorf("%s has no operationId", at)
		case ids[id] != "":
			t.Errorf("%s and %s share the operationId %s", ids[id], at, id)
		}
		ids[id] = at
		if body := asObject(o.op["requestBody"]); body != nil {
			doc.checkContent(t, at+" request", body)
		}
		for code, r := range asObject(o.op["responses"]) {
			resp := doc.resolve(r)
			if resp == nil {
				t.Errorf("%s %s: the response's $ref does not resolve", at, code)
				continue
			}
			doc.checkContent(t, at+" "+code, resp)
		}
	}
	for name, s := range asObject(asObject(doc["components"])["schemas"]) {
		walkSchemas(s, name, func(s map[string]any, at string) {
			if bare(s) {
				t.Errorf("schema %s is a bare object: name its properties", at)
			}
		})
	}
	walkRefs(map[string]any(doc), "#", func(ref, at string) {
		if doc.resolve(map[string]any{"$ref": ref}) == nil {
			t.Errorf("%s: $ref %s does not resolve", at, ref)
		}
	})
}

// checkContent checks the schemas of a request body or response: a JSON
// one is named, none is a bare object.
func (d openAPIDoc) checkContent(t *testing.T, at string, body map[string]any) {
	t.Helper()
	for media, c := range asObject(body["content"]) {
		s := asObject(asObject(c)["schema"])
		if s == nil {
			t.Errorf("%s %s has no schema", at, media)
			continue
		}
		if strings.Contains(media, "json") && !named(s) {
			t.Errorf("%s %s: the schema is not named (want a $ref into components/schemas)", at, media)
		}
		walkSchemas(s, at+" "+media, func(s map[string]any, at string) {
			if bare(s) {
				t.Errorf("%s is a bare object: name its properties", at)
			}
		})
	}
}

// named: s is a $ref, or a choice among $refs.
func named(s map[string]any) bool {
	if _, ok := s["$ref"]; ok {
		return true
	}
	alts := asArray(s["oneOf"])
	return len(alts) > 0 && !slices.ContainsFunc(alts, func(a any) bool { return asObject(a)["$ref"] == nil })
}

// bare: s says it is an object (or says no type at all) without naming
// its properties, its values' schema, or another schema it stands for.
func bare(s map[string]any) bool {
	for _, k := range []string{"$ref", "properties", "additionalProperties", "allOf", "oneOf", "anyOf", "items"} {
		if _, ok := s[k]; ok {
			return false
		}
	}
	typ, _ := s["type"].(string)
	return typ == "" || typ == "object"
}

// TestOpenAPIDescribesAnswers drives every operation with a JSON answer
// through a live server, its successes and the failures a client meets,
// and checks each answer against the document: its status is documented
// for the operation, and its body fits the documented schema, naming no
// key the schema does not.
func TestOpenAPIDescribesAnswers(t *testing.T) {
	ts := newTestServer(t)
	doc := loadOpenAPI(t)
	seen := map[string]bool{}
	check := func(want int, role Role, method, path, body string, hdr ...string) json.RawMessage {
		t.Helper()
		var raw json.RawMessage
		if got := ts.do(role, method, path, body, &raw, hdr...); got != want {
			t.Fatalf("%s %s as %q: status %d, want %d: %s", method, path, role, got, want, raw)
		}
		route := doc.route(strings.Split(path, "?")[0])
		seen[strings.ToUpper(method)+" "+route] = true
		for _, p := range doc.answerProblems(method, route, want, raw) {
			t.Errorf("%s %s → %d: %s", method, path, want, p)
		}
		return raw
	}
	check(200, "", "GET", "/healthz", "")
	check(200, "", "GET", "/readyz", "")
	check(200, "", "GET", "/openapi.json", "")
	check(200, RoleIngest, "GET", "/v1/whoami", "")
	check(401, "", "GET", "/v1/whoami", "")
	check(403, RoleIngest, "GET", "/v1/learners", "")
	check(413, RoleAdmin, "POST", "/v1/tokens", strings.Repeat(" ", 65<<10))

	// Learners: create, refuse, list.
	check(201, RoleAdmin, "POST", "/v1/learners", `{"name":"fraud","dim":2,"config":{"window":1}}`)
	check(201, RoleAdmin, "POST", "/v1/learners", `{"name":"spam","dim":3,"budget":5,"max_open_requests":10}`)
	check(409, RoleAdmin, "POST", "/v1/learners", `{"name":"fraud","dim":2}`)
	check(400, RoleAdmin, "POST", "/v1/learners", `{"name":"tree","dim":2,"config":{"update":"tree"}}`)
	if page := check(200, RoleOfficer, "GET", "/v1/learners?limit=1", ""); !strings.Contains(string(page), `"next"`) {
		t.Errorf("a first page of 1 of 2 learners has no next: %s", page)
	}
	check(400, RoleOfficer, "GET", "/v1/learners?limit=0", "")

	// Events: a batch of JSON Lines (a client id, a bad line), one JSON
	// event, CSV, and the refusals.
	check(200, RoleIngest, "POST", "/v1/learners/fraud/events", events(40)+`{"x":[0.1,0.2],"id":"rec-7"}`+"\n1,2,3\n",
		"Content-Type", "application/x-ndjson")
	check(200, RoleIngest, "POST", "/v1/learners/fraud/events", `{"x": [0.3, 0.1]}`, "Content-Type", "application/json")
	check(200, RoleIngest, "POST", "/v1/learners/fraud/events", "0.2,0.1\n", "Content-Type", "text/csv")
	check(404, RoleIngest, "POST", "/v1/learners/nope/events", "0,0\n")
	check(400, RoleIngest, "POST", "/v1/learners/fraud/events", "0,0\n", "Idempotency-Key", "")
	check(200, RoleIngest, "POST", "/v1/learners/spam/events", "0,0,0\n", "Idempotency-Key", "k1")
	check(422, RoleIngest, "POST", "/v1/learners/spam/events", "0,0,1\n", "Idempotency-Key", "k1")

	// Annotation: list, claim, label, and the conflicts.
	var list requestList
	if err := json.Unmarshal(check(200, RoleAnnotator, "GET", "/v1/learners/fraud/requests", ""), &list); err != nil || len(list.Requests) == 0 {
		t.Fatalf("no label requests in 42 events (%v)", err)
	}
	id := list.Requests[0].ID
	claim := fmt.Sprintf("/v1/learners/fraud/requests/%d/claim", id)
	check(200, RoleAnnotator, "POST", claim, "")
	check(409, RoleAdmin, "POST", claim, "")
	check(400, RoleAnnotator, "POST", "/v1/learners/fraud/requests/0/claim", "")
	check(404, RoleAnnotator, "POST", "/v1/learners/fraud/requests/999999/claim", "")
	check(200, RoleAnnotator, "POST", "/v1/learners/fraud/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id))
	check(409, RoleAnnotator, "POST", "/v1/learners/fraud/labels", fmt.Sprintf(`{"id":%d,"y":1}`, id))
	check(400, RoleAnnotator, "POST", "/v1/learners/fraud/labels", fmt.Sprintf(`{"id":%d,"y":0}`, id))

	// The officer's reads.
	check(200, RoleOfficer, "GET", "/v1/learners/fraud/releases", "")
	check(400, RoleOfficer, "GET", "/v1/learners/fraud/releases?after=x", "")
	check(200, RoleOfficer, "GET", "/v1/learners/fraud/model", "")
	check(200, RoleOfficer, "GET", "/v1/learners/fraud/budget", "")
	check(404, RoleOfficer, "GET", "/v1/learners/nope/budget", "")
	check(200, RoleOfficer, "GET", "/v1/records/rec-7/epsilon", "")
	check(200, RoleOfficer, "GET", "/v1/records/fraud:1/epsilon", "")
	check(404, RoleOfficer, "GET", "/v1/records/nope/epsilon", "")
	check(200, RoleOfficer, "GET", "/v1/ledger?learner=fraud", "")
	check(404, RoleOfficer, "GET", "/v1/ledger?search=nope", "")

	// Searches.
	check(201, RoleAdmin, "POST", "/v1/searches",
		`{"name":"hosts","oracle":"noisy-max","params":{"t_low":1,"t_high":10,"epsilon":0.5},"halting":{"posterior":0.99},"budget":6}`)
	check(409, RoleAdmin, "POST", "/v1/searches", `{"name":"hosts","oracle":"rr","params":{"t_low":1,"t_high":10,"epsilon":0.5}}`)
	var scores strings.Builder
	for i := range 20 {
		fmt.Fprintf(&scores, "%d,%g\n", 100+i, float64(i%5)/10+10*float64(max(0, i-18)))
	}
	scores.WriteString("x,1\n")
	check(200, RoleIngest, "POST", "/v1/searches/hosts/scores", scores.String(), "Content-Type", "text/csv")
	check(400, RoleIngest, "POST", "/v1/searches/hosts/scores", "# nothing\n")
	check(200, RoleAdmin, "POST", "/v1/searches/hosts/runs", "")
	check(201, RoleAdmin, "POST", "/v1/searches", `{"name":"flat","oracle":"rr","params":{"t_low":1,"t_high":10,"epsilon":0.5}}`)
	check(200, RoleIngest, "POST", "/v1/searches/flat/scores", "0.5\n2\n")
	check(409, RoleAdmin, "POST", "/v1/searches/flat/runs", "")
	check(200, RoleOfficer, "GET", "/v1/searches/hosts", "")
	check(404, RoleOfficer, "GET", "/v1/searches/nope", "")
	check(200, RoleOfficer, "GET", "/v1/ledger", "")

	// Tokens.
	var tok struct{ ID string }
	if err := json.Unmarshal(check(201, RoleAdmin, "POST", "/v1/tokens", `{"role":"officer"}`), &tok); err != nil {
		t.Fatal(err)
	}
	check(400, RoleAdmin, "POST", "/v1/tokens", `{"role":"king"}`)
	check(204, RoleAdmin, "DELETE", "/v1/tokens/"+tok.ID, "")
	check(404, RoleAdmin, "DELETE", "/v1/tokens/"+tok.ID, "")
	check(400, RoleAdmin, "DELETE", "/v1/tokens/"+TokenID(ts.tok[RoleAdmin]), "")

	driveProjects(t, ts, check)

	// Every operation with a JSON answer was driven.
	for _, o := range doc.operations() {
		at := strings.ToUpper(o.method) + " " + o.path
		if !seen[at] && doc.answersJSON(o.op) {
			t.Errorf("%s was not driven: add it here", at)
		}
	}
}

// openAPIDoc is the served document, decoded as it is for the checks.
type openAPIDoc map[string]any

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// obj and list read v as a JSON object or array (nil if it is none).
func asObject(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asArray(v any) []any           { a, _ := v.([]any); return a }

// operation is one documented method of a path.
type operation struct {
	path, method string
	op           map[string]any
}

// operations lists the documented operations by path and method.
func (d openAPIDoc) operations() []operation {
	var out []operation
	for path, item := range asObject(d["paths"]) {
		for method, op := range asObject(item) {
			if m := asObject(op); m != nil && method != "parameters" {
				out = append(out, operation{path: path, method: method, op: m})
			}
		}
	}
	slices.SortFunc(out, func(a, b operation) int { return strings.Compare(a.path+" "+a.method, b.path+" "+b.method) })
	return out
}

// resolve follows v's local $refs ("#/components/…") to the object they
// name; nil if one does not resolve.
func (d openAPIDoc) resolve(v any) map[string]any {
	m := asObject(v)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = map[string]any(d)
		for part := range strings.SplitSeq(strings.TrimPrefix(ref, "#/"), "/") {
			cur = asObject(cur)[part]
		}
		m = asObject(cur)
	}
	return nil
}

// route is the documented path that a request path matches; a literal
// segment is preferred to a parameter.
func (d openAPIDoc) route(path string) string {
	want := strings.Split(path, "/")
	best := ""
	for p := range asObject(d["paths"]) {
		segs := strings.Split(p, "/")
		if len(segs) != len(want) {
			continue
		}
		match := true
		for i, s := range segs {
			if s != want[i] && !(strings.HasPrefix(s, "{") && want[i] != "") {
				match = false
				break
			}
		}
		if match && (best == "" || strings.Count(p, "{") < strings.Count(best, "{")) {
			best = p
		}
	}
	return best
}

// answersJSON: some 2xx answer of op is JSON.
func (d openAPIDoc) answersJSON(op map[string]any) bool {
	for code, r := range asObject(op["responses"]) {
		if strings.HasPrefix(code, "2") && asObject(asObject(d.resolve(r)["content"])["application/json"]) != nil {
			return true
		}
	}
	return false
}

// answerProblems checks one answer against the document.
func (d openAPIDoc) answerProblems(method, route string, status int, raw json.RawMessage) []string {
	op := asObject(asObject(asObject(d["paths"])[route])[strings.ToLower(method)])
	if op == nil {
		return []string{"undocumented operation " + route}
	}
	resp := d.resolve(asObject(op["responses"])[strconv.Itoa(status)])
	if resp == nil {
		return []string{"status undocumented"}
	}
	content := asObject(resp["content"])
	if content == nil {
		if len(raw) > 0 {
			return []string{"an answer documented without a body has one"}
		}
		return nil
	}
	schema := asObject(content["application/json"])["schema"]
	if schema == nil {
		return []string{"no application/json schema"}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	return d.fits(schema, v, "$")
}

// fits says where v departs from schema, read as the subset of OpenAPI
// 3.0's schema objects the document uses: $ref, oneOf, allOf, type,
// enum, required, properties, additionalProperties, items and the
// date-time format. An object may hold only the keys its schema names,
// unless additionalProperties allows others: the document must name every
// key the server sends.
func (d openAPIDoc) fits(schema, v any, at string) []string {
	s := d.resolve(schema)
	if s == nil {
		return []string{at + ": no schema"}
	}
	if alts := asArray(s["oneOf"]); len(alts) > 0 {
		n, why := 0, []string{}
		for _, a := range alts {
			if p := d.fits(a, v, at); len(p) == 0 {
				n++
			} else {
				why = append(why, p...)
			}
		}
		if n == 1 {
			return nil
		}
		return append([]string{fmt.Sprintf("%s fits %d of %d oneOf schemas", at, n, len(alts))}, why...)
	}
	var out []string
	for _, a := range asArray(s["allOf"]) {
		out = append(out, d.fits(a, v, at)...)
	}
	typ, _ := s["type"].(string)
	switch typ {
	case "object":
		return append(out, d.fitsObject(s, v, at)...)
	case "array":
		a, ok := v.([]any)
		if !ok {
			return append(out, fmt.Sprintf("%s is %T, want an array", at, v))
		}
		for i, x := range a {
			out = append(out, d.fits(s["items"], x, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	}
	if p := fitsScalar(s, typ, v, at); p != "" {
		out = append(out, p)
	}
	return out
}

func (d openAPIDoc) fitsObject(s map[string]any, v any, at string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s is %T, want an object", at, v)}
	}
	var out []string
	for _, k := range asArray(s["required"]) {
		if _, ok := m[k.(string)]; !ok {
			out = append(out, fmt.Sprintf("%s lacks the required %s", at, k))
		}
	}
	props := asObject(s["properties"])
	for k, x := range m {
		switch p, extra := props[k], s["additionalProperties"]; {
		case p != nil:
			out = append(out, d.fits(p, x, at+"."+k)...)
		case asObject(extra) != nil:
			out = append(out, d.fits(extra, x, at+"."+k)...)
		case extra != true:
			out = append(out, fmt.Sprintf("%s.%s is not in the schema", at, k))
		}
	}
	return out
}

// fitsScalar checks a string, number, integer or boolean and its enum.
func fitsScalar(s map[string]any, typ string, v any, at string) string {
	var ok bool
	switch typ {
	case "string":
		var str string
		str, ok = v.(string)
		if ok && s["format"] == "date-time" {
			_, err := time.Parse(time.RFC3339Nano, str)
			ok = err == nil
		}
	case "number":
		_, ok = v.(float64)
	case "integer":
		f, isNum := v.(float64)
		ok = isNum && f == math.Trunc(f)
	case "boolean":
		_, ok = v.(bool)
	default:
		return fmt.Sprintf("%s: the schema has no type", at)
	}
	if !ok {
		return fmt.Sprintf("%s is %v (%T), want a %s %v", at, v, v, typ, s["format"])
	}
	if enum := asArray(s["enum"]); enum != nil && !slices.Contains(enum, v) {
		return fmt.Sprintf("%s is %v, not one of %v", at, v, enum)
	}
	return ""
}

// walkSchemas calls f on schema v and on every schema inside it.
func walkSchemas(v any, at string, f func(s map[string]any, at string)) {
	s := asObject(v)
	if s == nil {
		return
	}
	f(s, at)
	for k, p := range asObject(s["properties"]) {
		walkSchemas(p, at+"."+k, f)
	}
	walkSchemas(s["items"], at+"[]", f)
	walkSchemas(s["additionalProperties"], at+"{}", f)
	for _, k := range []string{"allOf", "oneOf", "anyOf"} {
		for i, a := range asArray(s[k]) {
			walkSchemas(a, fmt.Sprintf("%s.%s[%d]", at, k, i), f)
		}
	}
}

// walkRefs calls f on every $ref in v.
func walkRefs(v any, at string, f func(ref, at string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if ref, ok := x.(string); ok && k == "$ref" {
				f(ref, at)
			}
			walkRefs(x, at+"/"+k, f)
		}
	case []any:
		for i, x := range v {
			walkRefs(x, fmt.Sprintf("%s/%d", at, i), f)
		}
	}
}
