package data

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxQuoted is the most bytes of a field an error message repeats.
const maxQuoted = 64

// Quote quotes a field of an input file for an error message, as %q does,
// but cut to its first 64 bytes (at a character boundary) with the full
// length noted: a bad 12 MB line must not be echoed whole into a log. Every
// loader quotes offending input through it.
func Quote[T ~string | ~[]byte](field T) string {
	s := string(field[:min(len(field), maxQuoted+utf8.UTFMax)])
	if len(field) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(field))
}
