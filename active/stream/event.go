package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dpal-dev/dpal/data"
)

// Event files hold one event per line, either a CSV row of feature values
// ("0.1,0,-0.3") or a JSON object ({"x": [0.1, 0, -0.3]}); the form is
// chosen per line by its first character. Label files hold one label per
// line in the same order: "1", "-1", "+1" or {"y": 1}. Blank lines and
// lines starting with '#' are skipped in both.

// maxLine bounds one line of an event or label file (16 MiB).
const maxLine = 16 << 20

// ParseEvent parses one event line into dst (reusing its storage) and
// returns the features. Values must be finite numbers.
func ParseEvent(line []byte, dst []float64) ([]float64, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, errors.New("empty event")
	}
	if line[0] == '{' {
		var x []float64
		if err := decodeObject(line, map[string]any{"x": &x}); err != nil {
			return nil, fmt.Errorf("JSON event: %w", err)
		}
		if x == nil {
			return nil, errors.New(`JSON event has no "x" array`)
		}
		return x, nil
	}
	dst = dst[:0]
	for i := 0; len(line) > 0 || i == 0; i++ {
		field := line
		if j := bytes.IndexByte(line, ','); j >= 0 {
			field, line = line[:j], line[j+1:]
			if len(line) == 0 {
				return nil, fmt.Errorf("field %d: trailing comma", i+2)
			}
		} else {
			line = nil
		}
		field = bytes.TrimSpace(field)
		v, err := strconv.ParseFloat(string(field), 64)
		if err != nil {
			return nil, fmt.Errorf("field %d: not a number: %s", i+1, data.Quote(field))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("field %d: not finite: %v", i+1, v)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// ParseLabel parses one label line: -1 or +1, as a number or {"y": ±1}.
func ParseLabel(line []byte) (float64, error) {
	line = bytes.TrimSpace(line)
	var y float64
	if len(line) > 0 && line[0] == '{' {
		var v *float64
		if err := decodeObject(line, map[string]any{"y": &v}); err != nil {
			return 0, fmt.Errorf("JSON label: %w", err)
		}
		if v == nil {
			return 0, errors.New(`JSON label has no "y"`)
		}
		y = *v
	} else {
		v, err := strconv.ParseFloat(string(line), 64)
		if err != nil {
			return 0, fmt.Errorf("label: not a number: %s", data.Quote(line))
		}
		y = v
	}
	if y != 1 && y != -1 {
		return 0, fmt.Errorf("label %v is not -1 or +1", y)
	}
	return y, nil
}

// ParseAnswer parses one line of an answers file, the oracle's late labels
// for pending requests: "id,y" or {"id": 17, "y": -1}.
func ParseAnswer(line []byte) (id uint64, y float64, err error) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '{' {
		var idp *uint64
		var yp *float64
		if err := decodeObject(line, map[string]any{"id": &idp, "y": &yp}); err != nil {
			return 0, 0, fmt.Errorf("JSON answer: %w", err)
		}
		if idp == nil || yp == nil {
			return 0, 0, errors.New(`JSON answer needs "id" and "y"`)
		}
		id, y = *idp, *yp
	} else {
		idField, yField, ok := bytes.Cut(line, []byte{','})
		if !ok {
			return 0, 0, errors.New("answer: want id,y")
		}
		idField, yField = bytes.TrimSpace(idField), bytes.TrimSpace(yField)
		if id, err = strconv.ParseUint(string(idField), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("answer id: not an unsigned integer: %s", data.Quote(idField))
		}
		if y, err = strconv.ParseFloat(string(yField), 64); err != nil {
			return 0, 0, fmt.Errorf("answer label: not a number: %s", data.Quote(yField))
		}
	}
	if y != 1 && y != -1 {
		return 0, 0, fmt.Errorf("answer for event %d: label %v is not -1 or +1", id, y)
	}
	return id, y, nil
}

// decodeObject decodes the JSON object line into fields, which maps each
// key it reads to a pointer; other keys are skipped. Keys match exactly:
// encoding/json alone matches names case-insensitively and keeps the last
// of repeated keys, so {"X": …} would pass for "x" and a duplicated key in
// a private record would pass silently. Both are errors here.
func decodeObject(line []byte, fields map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("want a JSON object")
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		dst, ok := fields[key]
		switch {
		case seen[key]:
			return fmt.Errorf("key %s repeated", data.Quote(key))
		case !ok:
			for k := range fields {
				if strings.EqualFold(k, key) {
					return fmt.Errorf("key %s: keys are case-sensitive, want %q", data.Quote(key), k)
				}
			}
			dst = &skip
		}
		seen[key] = true
		if err := dec.Decode(dst); err != nil {
			return fmt.Errorf("key %s: %w", data.Quote(key), err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// LineReader yields the non-blank, non-comment lines of an event or label
// file with their 1-based line numbers, for error messages.
type LineReader struct {
	sc   *bufio.Scanner
	line int
	off  int64
	tee  io.Writer
}

// NewLineReader reads lines from r.
func NewLineReader(r io.Reader) *LineReader {
	return NewLineReaderTee(r, nil)
}

// NewLineReaderTee reads lines from r and writes every byte it consumes
// (content, blank and comment lines, line ends), in order, to consumed
// if it is not nil: a hash there identifies the input read so far.
func NewLineReaderTee(r io.Reader, consumed io.Writer) *LineReader {
	lr := &LineReader{sc: bufio.NewScanner(r), tee: consumed}
	lr.sc.Buffer(make([]byte, 64<<10), maxLine)
	lr.sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if adv > 0 {
			lr.off += int64(adv)
			if lr.tee != nil {
				lr.tee.Write(data[:adv])
			}
		}
		return adv, tok, err
	})
	return lr
}

// Offset returns how many bytes of the input the lines returned so far
// (and the blank and comment lines read with them) took: after Next
// returns a line, the offset just past its line end.
func (lr *LineReader) Offset() int64 { return lr.off }

// Next returns the next content line and its number, or io.EOF. The bytes
// are valid until the following call.
func (lr *LineReader) Next() ([]byte, int, error) {
	for lr.sc.Scan() {
		lr.line++
		b := bytes.TrimSpace(lr.sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		return b, lr.line, nil
	}
	if err := lr.sc.Err(); err != nil {
		return nil, lr.line + 1, fmt.Errorf("line %d: %w", lr.line+1, err)
	}
	return nil, lr.line, io.EOF
}
