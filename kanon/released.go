package kanon

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// WriteReleased writes a released query set in the one format that
// `dpal kanon run --released-out` and dpal-beam's --output share: one
// query per line, sorted bytewise, deduplicated, UTF-8, each line ending
// in "\n". For one input and seed the two files are byte-identical.
func WriteReleased(w io.Writer, queries []string) error {
	qs := slices.Compact(slices.Sorted(slices.Values(queries)))
	bw := bufio.NewWriter(w)
	for _, q := range qs {
		if !utf8.ValidString(q) || strings.ContainsAny(q, "\n") {
			return fmt.Errorf("released query %q: not one line of UTF-8", q)
		}
		bw.WriteString(q)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadReleased reads what WriteReleased wrote (dpal-beam's output), for
// `dpal kanon run --stage-from`. It refuses lines that are not UTF-8 and
// an unsorted file, which WriteReleased never writes.
func ReadReleased(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var out []string
	for n := 1; sc.Scan(); n++ {
		q := sc.Text()
		if !utf8.ValidString(q) {
			return nil, fmt.Errorf("released line %d: not valid UTF-8", n)
		}
		if len(out) > 0 && out[len(out)-1] >= q {
			return nil, fmt.Errorf("released line %d: not sorted after the line before (not a released-set file)", n)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("released set: %w", err)
	}
	return out, nil
}
