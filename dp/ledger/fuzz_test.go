package ledger_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// seedEntries are stored forms of real entries, as a ledger writes them.
func seedEntries(f *testing.F) [][]byte {
	curve, err := account.SubsampledGaussian([]account.Phase{{SampleRate: 0.01, NoiseMultiplier: 1.2, Steps: 10}})
	if err != nil {
		f.Fatal(err)
	}
	l := mustNew(f, account.Budget{Epsilon: 10, Delta: 1e-5})
	mixed, _ := account.Compose(lap(0.1), account.ZCDP("gaussian", 0.01), curve)
	for _, c := range []ledger.Charge{
		{Groups: one("a"), Loss: lap(0.5)},
		{Groups: []string{"a", "b"}, Loss: gauss(0.3, 1e-7), Once: "k", Note: "a note"},
		{Groups: one("b"), Loss: curve},
		{Groups: one("c"), Loss: mixed},
	} {
		if _, err := l.Record(c); err != nil {
			f.Fatal(err)
		}
	}
	entries, err := l.Entries()
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		out = append(out, mustJSON(f, e))
	}
	return out
}

func FuzzDecodeEntry(f *testing.F) {
	for _, b := range seedEntries(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"seq":1,"time":"2025-01-01T00:00:00+05:30","groups":["g"],"loss":{"epsilon":-0,"params":{}}}`))
	f.Add([]byte(`{"seq":0,"groups":["g"],"loss":{"epsilon":0.1}}`))
	f.Add([]byte(`{"seq":2,"groups":["g"],"loss":{"orders":[2,3],"rdp":[0.1]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ledger.DecodeEntry, sameEntry) })
}

func FuzzDecodeMeta(f *testing.F) {
	for _, c := range []account.Conversion{account.Balle2020, account.Classic} {
		l := mustNew(f, account.Budget{Epsilon: 1.5, Delta: 1e-6}, ledger.WithConversion(c))
		f.Add(mustJSON(f, l.Meta()))
	}
	f.Add(mustJSON(f, ledger.Meta{Version: ledger.Version, Budget: account.Budget{Epsilon: 1}, Created: time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600))}))
	f.Add([]byte(`{"version":2,"budget":{"epsilon":1,"delta":0},"conversion":" Classic "}`))
	f.Add([]byte(`{"version":2,"budget":{"epsilon":0,"delta":0},"conversion":"nope"}`))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ledger.DecodeMeta, sameMeta) })
}

func sameMeta(a, b ledger.Meta) bool {
	return a.Version == b.Version && a.Budget == b.Budget && a.Conversion == b.Conversion && a.Created.Equal(b.Created)
}

// roundTrip checks that whatever decode accepts encodes, decodes again
// and is the same value.
func roundTrip[T any](t *testing.T, b []byte, decode func([]byte, *T) error, same func(a, b T) bool) {
	var v T
	if err := decode(b, &v); err != nil {
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("decoded %+v does not encode: %v", v, err)
	}
	var back T
	if err := decode(enc, &back); err != nil {
		t.Fatalf("re-encoded %s does not decode: %v", enc, err)
	}
	if !same(v, back) {
		t.Fatalf("%+v became %+v", v, back)
	}
}
