package account

import (
	"strings"
	"testing"
)

func FuzzParseConversion(f *testing.F) {
	for _, s := range []string{"balle2020", "classic", " Classic ", "BALLE2020", "", "rdp", "classic\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConversion(s)
		if err != nil {
			if !strings.Contains(err.Error(), "unknown RDP conversion") {
				t.Fatalf("ParseConversion(%q): unexpected error %v", s, err)
			}
			return
		}
		if c != Balle2020 && c != Classic {
			t.Fatalf("ParseConversion(%q) = %d, not a known conversion", s, int(c))
		}
		b, err := c.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", c, err)
		}
		var back Conversion
		if err := back.UnmarshalText(b); err != nil || back != c {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}
