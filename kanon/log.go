package kanon

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Query is one occurrence of a query in the log, with its intent label
// (known to the simulator; the learner sees labels only from annotators).
type Query struct {
	Text  string `json:"text"`
	Label string `json:"label,omitempty"`
}

// maxLine bounds one log line (1 MiB).
const maxLine = 1 << 20

// ReadLog reads a plain-text log: one query per line, optionally followed
// by a tab and its label. Blank lines are skipped. A line that is not
// UTF-8 or too long is an error naming it; an empty log is an error.
func ReadLog(r io.Reader) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var out []Query
	for n := 1; sc.Scan(); n++ {
		q, ok, err := ParseLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("log line %d: %w", n, err)
		}
		if ok {
			out = append(out, q)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("log line %d: %w", len(out)+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New("log is empty: no query lines")
	}
	return out, nil
}

// ParseLine reads one log line (without its newline): the query, then
// optionally a tab and its label, both trimmed of surrounding space; ok
// is false for a blank line. The Beam pipeline parses textio's lines with
// it, so both read the same queries.
func ParseLine(line string) (q Query, ok bool, err error) {
	if !utf8.ValidString(line) {
		return Query{}, false, errors.New("not valid UTF-8")
	}
	if len(line) > maxLine {
		return Query{}, false, fmt.Errorf("line longer than %d bytes", maxLine)
	}
	text, label, _ := strings.Cut(line, "\t")
	text = strings.TrimSpace(text)
	if text == "" {
		return Query{}, false, nil
	}
	return Query{Text: text, Label: strings.TrimSpace(label)}, true, nil
}

// ReadLogFile is ReadLog on a file.
func ReadLogFile(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	q, err := ReadLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return q, nil
}

// LoadSLURP returns SLURP's devel and test text entries (dir is the data
// root holding slurp_text/) as a log: each spoken event is one occurrence
// of its sentence (recordings with the same audio id, headset and
// far-field, are one event), labelled with the intent.
func LoadSLURP(dir string) ([]Query, error) {
	var out []Query
	for _, split := range []string{"devel", "test"} {
		path := filepath.Join(dir, "slurp_text", split+".jsonl.gz")
		rc, err := data.OpenGzip(path)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(rc)
		for n := 1; ; n++ {
			var e struct {
				Sentence   string `json:"sentence"`
				Intent     string `json:"intent"`
				Recordings []struct {
					File string `json:"file"`
				} `json:"recordings"`
			}
			if err := dec.Decode(&e); err == io.EOF {
				break
			} else if err != nil {
				rc.Close()
				return nil, fmt.Errorf("%s entry %d: %w", path, n, err)
			}
			events := map[string]bool{}
			for _, r := range e.Recordings {
				id := strings.TrimSuffix(strings.TrimSuffix(r.File, ".flac"), "-headset")
				events[id] = true
			}
			for range max(len(events), 1) {
				out = append(out, Query{Text: e.Sentence, Label: e.Intent})
			}
		}
		rc.Close()
	}
	return out, nil
}

// ZipfCLINC is the frequency dpal imposes on CLINC150, which has no
// natural repeats: the distinct in-scope utterances, in a seeded random
// order, get counts ⌈C·r^{−S}⌉ by rank r (so every one occurs at least once).
type ZipfCLINC struct {
	C float64 `json:"c"`
	S float64 `json:"s"`
}

// DefaultZipfCLINC is C = 2000, S = 1: about 45,000 occurrences over the
// 22,500 in-scope utterances, the top one 2000 times.
var DefaultZipfCLINC = ZipfCLINC{C: 2000, S: 1}

// LoadCLINC returns CLINC150's in-scope utterances (train, val, test;
// dir is the data root holding clinc150/) as a log with the Zipf
// frequency z imposed, in an order drawn from seed. Labels are
// "domain:intent" (domains.json), so a binary task can pick domains by
// prefix.
func LoadCLINC(dir string, z ZipfCLINC, seed uint64) ([]Query, error) {
	domainOf, err := clincDomains(filepath.Join(dir, "clinc150", "domains.json"))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "clinc150", "data_full.json.gz")
	rc, err := data.OpenGzip(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var raw map[string][][2]string
	if err := json.NewDecoder(rc).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	var distinct []Query
	for _, split := range []string{"train", "val", "test"} {
		for _, p := range raw[split] {
			if !seen[p[0]] {
				seen[p[0]] = true
				d, ok := domainOf[p[1]]
				if !ok {
					return nil, fmt.Errorf("%s: intent %s is in no domain of domains.json", path, data.Quote(p[1]))
				}
				distinct = append(distinct, Query{Text: p[0], Label: d + ":" + p[1]})
			}
		}
	}
	r := rng.Seeded(seed)
	r.Shuffle(len(distinct), func(i, j int) { distinct[i], distinct[j] = distinct[j], distinct[i] })
	var out []Query
	for i, q := range distinct {
		for range int(math.Ceil(z.C * math.Pow(float64(i+1), -z.S))) {
			out = append(out, q)
		}
	}
	return out, nil
}

// clincDomains reads domains.json: domain → intents, inverted.
func clincDomains(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var byDomain map[string][]string
	if err := json.Unmarshal(b, &byDomain); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	for d, intents := range byDomain {
		for _, i := range intents {
			out[i] = d
		}
	}
	return out, nil
}

// Labels returns the distinct labels of qs, sorted.
func Labels(qs []Query) []string {
	set := map[string]bool{}
	for _, q := range qs {
		set[q.Label] = true
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}
