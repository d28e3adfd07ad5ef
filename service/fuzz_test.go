package service

import (
	"math"
	"testing"
)

// FuzzParseEvents: any body parses without panic; every event it passes
// has the declared dimension and finite values; every other names a field.
func FuzzParseEvents(f *testing.F) {
	for _, s := range []string{"0.1,0.2\n", `{"x":[0.1,0.2],"id":"r1"}`, "NaN,1\n\n#c\n1,2,3", `{"x":[1e999,0]}`, `{"x":[0,0],"id":7}`, `{"X":[0,0]}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, oneJSON bool) {
		for _, ev := range parseEvents(body, oneJSON, 2) {
			if ev.field != "" {
				continue
			}
			if len(ev.x) != 2 {
				t.Fatalf("line %d passed with dimension %d", ev.line, len(ev.x))
			}
			for _, v := range ev.x {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("line %d passed with %v", ev.line, v)
				}
			}
			if ev.record != "" && !validRecordID(ev.record) {
				t.Fatalf("line %d passed with record id %q", ev.line, ev.record)
			}
		}
	})
}

// FuzzDecodeCreate: a create request that passes has a valid name and a
// private configuration whose budget covers one record.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{`{"name":"a","dim":2}`, `{"name":"a","dim":2,"config":{"window":1,"selector":"exponential"}}`,
		`{"name":"a","dim":3,"budget":0.1}`, `{"name":"a","dim":2,"config":{"non_private":true}}`, `{"name":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := decodeCreate(b)
		name, cfg, budget := spec.Name, spec.Config, spec.Budget
		if err != nil {
			if statusOf(err) != 400 {
				t.Fatalf("status %d for %v", statusOf(err), err)
			}
			return
		}
		rec, err := cfg.RecordEpsilon()
		if !nameRE.MatchString(name) || err != nil || cfg.NonPrivate || budget < rec*(1-1e-12) || spec.MaxOpen < 1 || spec.MaxOpen > maxMaxOpen {
			t.Fatalf("accepted %q %+v budget %v (record ε %v, %v)", name, cfg, budget, rec, err)
		}
	})
}

// FuzzDecodeLabel: a label that passes names a request and is ±1.
func FuzzDecodeLabel(f *testing.F) {
	for _, s := range []string{`{"id":1,"y":1}`, `{"id":0,"y":-1}`, `{"id":1,"y":2}`, `{"id":-1}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeLabel(b)
		if err == nil && (req.ID == 0 || (req.Y != 1 && req.Y != -1)) {
			t.Fatalf("accepted %+v", req)
		}
	})
}
