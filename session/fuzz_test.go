package session

import (
	"bytes"
	"testing"
)

// FuzzReadState: any bytes either fail the integrity check or are a state
// sealed with the key; nothing panics.
func FuzzReadState(f *testing.F) {
	var sealed bytes.Buffer
	if err := Seal(&sealed, []byte(`{"version":3}`), testKey); err != nil {
		f.Fatal(err)
	}
	f.Add(sealed.Bytes())
	f.Add([]byte(`{"format":"dpal-stream-state","mac":"zz","state":{}}`))
	f.Add([]byte(`{"version":3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, err := ReadState(bytes.NewReader(b), testKey)
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := Seal(&again, state, testKey); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadState(&again, testKey); err != nil {
			t.Fatalf("a state that passed does not pass resealed: %v", err)
		}
	})
}
