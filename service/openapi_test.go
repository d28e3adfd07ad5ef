package service

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
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
		method, path, _ := strings.Cut(r.Pattern, " ")
		path = strings.TrimSuffix(path, "{$}") // "/{$}" is the exact path "/"
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("%s is served but not documented", r.Pattern)
			continue
		}
		delete(documented, method+" "+path)
		if !slices.Equal(op.Roles, r.Roles) && !(len(op.Roles) == 0 && len(r.Roles) == 0) {
			t.Errorf("%s: documented roles %v, served %v", r.Pattern, op.Roles, r.Roles)
		}
		if len(r.Roles) > 0 && (op.Responses["401"] == nil || op.Responses["403"] == nil) {
			t.Errorf("%s: 401 and 403 undocumented", r.Pattern)
		}
		if len(r.Roles) == 0 && (op.Security == nil || len(*op.Security) != 0) {
			t.Errorf("%s needs no token, but the document does not say so", r.Pattern)
		}
	}
	for p := range documented {
		t.Errorf("%s is documented but not served", p)
	}
}
