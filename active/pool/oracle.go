package pool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Oracle is the trusted labeller of paper 001 (§3.1): it is shown the pool
// records the loop chose (the initial random set, then each private
// selection) and returns their classes. What it is shown has already been
// released through a mechanism charged to the ledger (or drawn without
// looking at the data), so asking costs no further privacy.
type Oracle interface {
	// Label returns the classes of the pool records idx, in order, each in
	// [0, classes).
	Label(idx []int) ([]int, error)
}

// DatasetOracle reveals the labels the pool already carries: the paper's
// simulation (§4: "the labels of the chosen points are revealed").
type DatasetOracle struct {
	// Classes are the pool records' classes, by pool index.
	Classes []int
}

// Label returns the stored classes of idx.
func (o DatasetOracle) Label(idx []int) ([]int, error) {
	out := make([]int, len(idx))
	for i, j := range idx {
		if j < 0 || j >= len(o.Classes) {
			return nil, fmt.Errorf("oracle: record %d is not in the pool (0..%d)", j, len(o.Classes)-1)
		}
		out[i] = o.Classes[j]
	}
	return out, nil
}

// ReaderOracle asks a person, or reads a file of answers: for each record
// it writes a prompt line to Prompt (if not nil) and reads one answer line
// from the input, a class name or a class index. Blank lines and lines
// starting with # are skipped, so a file of answers can carry comments.
type ReaderOracle struct {
	in     *bufio.Scanner
	prompt io.Writer
	names  []string
	line   int
}

// NewReaderOracle reads answers from in for the classes names (their
// indices are accepted too), prompting on prompt.
func NewReaderOracle(in io.Reader, prompt io.Writer, names []string) *ReaderOracle {
	return &ReaderOracle{in: bufio.NewScanner(in), prompt: prompt, names: names}
}

// Label asks for each record's class in turn.
func (o *ReaderOracle) Label(idx []int) ([]int, error) {
	out := make([]int, len(idx))
	for i, j := range idx {
		if o.prompt != nil {
			fmt.Fprintf(o.prompt, "label of pool record %d (%s): ", j, strings.Join(o.names, ", "))
		}
		c, err := o.next()
		if err != nil {
			return nil, fmt.Errorf("oracle: record %d: %w", j, err)
		}
		out[i] = c
	}
	return out, nil
}

// next reads the next answer and parses it.
func (o *ReaderOracle) next() (int, error) {
	for o.in.Scan() {
		o.line++
		s := strings.TrimSpace(o.in.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		return o.parse(s)
	}
	if err := o.in.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no more answers (end of input)")
}

// parse accepts a class name (case-insensitive) or index.
func (o *ReaderOracle) parse(s string) (int, error) {
	for c, n := range o.names {
		if strings.EqualFold(s, n) {
			return c, nil
		}
	}
	if c, err := strconv.Atoi(s); err == nil && c >= 0 && c < len(o.names) {
		return c, nil
	}
	return 0, fmt.Errorf("line %d: %q is not a class (want one of %s, or 0..%d)", o.line, s, strings.Join(o.names, ", "), len(o.names)-1)
}
