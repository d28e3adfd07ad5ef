package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// KDD Cup 99 files, as named in the kddcup99 folder.
const (
	KDDTrainFile       = "kddcup.data_10_percent.gz"
	KDDTestFile        = "corrected.gz"
	KDDAttackTypesFile = "training_attack_types"
	KDDNamesFile       = "kddcup.names"
)

// KDDClassNames are the five-class labels of KDD Cup 99 plus "unknown", the
// class of test attacks that training_attack_types does not list (e.g.
// snmpgetattack, mailbomb, apache2 in corrected.gz). Such rows keep Y = +1.
var KDDClassNames = []string{"normal", "dos", "probe", "r2l", "u2r", "unknown"}

const kddUnknownClass = 5

// KDDOptions controls LoadKDD. The zero value is the recommended setting.
type KDDOptions struct {
	// Limit reads at most this many lines of each file (0 = all), for tests.
	Limit int
	// OneHotBinary encodes the 0/1 symbolic features land, logged_in and
	// is_guest_login as two one-hot columns each instead of one 0/1 column.
	// The second column adds no information; it exists to match the paper.
	OneHotBinary bool
	// VocabFromTest builds the protocol/service/flag vocabularies from the
	// training and test files together instead of training alone. corrected.gz
	// has one service ("icmp") absent from the 10 % file. Together with
	// OneHotBinary this gives the paper's 120 dimensions (Ghassemi et al. §5);
	// it lets the test file's category names, not its labels, shape the features.
	VocabFromTest bool
}

// kddFieldNames are the 41 feature names of kddcup.names, in file order.
var kddFieldNames = [41]string{
	"duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
	"wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
	"root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
	"num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
	"srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
	"same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
	"dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
	"dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
	"dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
}

type kddKind uint8

const (
	kddContinuous kddKind = iota // kept, scaled
	kddBinary                    // symbolic 0/1, kept
	kddSymbolic                  // one-hot encoded
	kddDropped                   // validated, then dropped (paper §5)
)

// kddKinds gives each field's treatment. The paper drops num_outbound_cmds
// (always 0) and is_host_login (all 0 in the 10 % file).
var kddKinds = func() [41]kddKind {
	var k [41]kddKind
	for i, name := range kddFieldNames {
		switch name {
		case "protocol_type", "service", "flag":
			k[i] = kddSymbolic
		case "land", "logged_in", "is_guest_login":
			k[i] = kddBinary
		case "num_outbound_cmds", "is_host_login":
			k[i] = kddDropped
		}
	}
	return k
}()

// kddCols lists, per kept numeric slot, the field index: continuous fields
// first, then binary ones. kddLog marks slots that get log1p (counts, bytes,
// durations: everything continuous that is not a *_rate in [0, 1]).
var kddCols, kddNumCont, kddLog = func() ([]int, int, []bool) {
	var cols []int
	var logs []bool
	for _, want := range []kddKind{kddContinuous, kddBinary} {
		for i, k := range kddKinds {
			if k == want {
				cols = append(cols, i)
				logs = append(logs, want == kddContinuous && !strings.HasSuffix(kddFieldNames[i], "_rate"))
			}
		}
	}
	n := 0
	for _, k := range kddKinds {
		if k == kddContinuous {
			n++
		}
	}
	return cols, n, logs
}()

// kddZeroOne marks the symbolic 0/1 fields, including dropped is_host_login.
var kddZeroOne = func() [41]bool {
	var z [41]bool
	for i, name := range kddFieldNames {
		z[i] = name == "land" || name == "logged_in" || name == "is_host_login" || name == "is_guest_login"
	}
	return z
}()

// kddKept is the number of kept numeric fields: 33 continuous + 3 binary.
const kddKept = 36

// kddSym lists the field indices of the one-hot encoded features.
var kddSym = [3]int{1, 2, 3}

// kddLine is one parsed line: the kept numeric values (continuous then
// binary, in kddCols order), the three symbolic values and the label, the
// byte slices pointing into the line.
type kddLine struct {
	num   [kddKept]float64
	sym   [3][]byte
	label []byte
}

// fieldError reports a bad field of a line; the caller adds file and line.
type fieldError struct {
	field int // 1-based
	name  string
	msg   string
}

func (e *fieldError) Error() string {
	if e.field == 0 {
		return e.msg
	}
	return fmt.Sprintf("field %d (%s): %s", e.field, e.name, e.msg)
}

// at places the error in a file: "FILE line N field F (NAME): MSG".
func (e *fieldError) at(file string, line int) error {
	if e.field == 0 {
		return fmt.Errorf("%s line %d: %w", file, line, e)
	}
	return fmt.Errorf("%s line %d %w", file, line, e)
}

// parse fills p from one KDD line (42 comma-separated fields, no newline).
func (p *kddLine) parse(line []byte) *fieldError {
	rest := line
	for f := 0; f < 42; f++ {
		i := bytes.IndexByte(rest, ',')
		var b []byte
		if i < 0 {
			b, rest = rest, nil
		} else {
			b, rest = rest[:i], rest[i+1:]
		}
		if i < 0 && f < 41 {
			return &fieldError{msg: fmt.Sprintf("%d fields, want 42", f+1)}
		}
		if f == 41 {
			if i >= 0 {
				return &fieldError{msg: "more than 42 fields"}
			}
			b = bytes.TrimSuffix(b, []byte{'.'})
			if len(b) == 0 {
				return &fieldError{field: 42, name: "label", msg: "empty"}
			}
			p.label = b
			return nil
		}
		if kddKinds[f] == kddSymbolic {
			if len(b) == 0 {
				return &fieldError{field: f + 1, name: kddFieldNames[f], msg: "empty"}
			}
			p.sym[symSlot(f)] = b
			continue
		}
		var v float64
		if kddZeroOne[f] {
			if len(b) != 1 || (b[0] != '0' && b[0] != '1') {
				return &fieldError{field: f + 1, name: kddFieldNames[f], msg: fmt.Sprintf("not 0 or 1: %s", Quote(b))}
			}
			v = float64(b[0] - '0')
		} else {
			var err error
			if v, err = parseCount(b); err != nil {
				return &fieldError{field: f + 1, name: kddFieldNames[f], msg: err.Error()}
			}
		}
		if kddKinds[f] == kddDropped {
			continue
		}
		p.num[kddSlot[f]] = v
	}
	return nil
}

func symSlot(f int) int { return f - 1 }

// kddSlot maps a field index to its slot in kddLine.num (−1 if none).
var kddSlot = func() [41]int {
	var s [41]int
	for i := range s {
		s[i] = -1
	}
	for slot, f := range kddCols {
		s[f] = slot
	}
	return s
}()

// parseCount parses a non-negative finite number. Plain digit strings (most
// KDD fields) skip strconv.
func parseCount(b []byte) (float64, error) {
	if len(b) > 0 && len(b) <= 15 {
		var v int64
		ok := true
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if ok {
			return float64(v), nil
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number: %s", Quote(b))
	}
	if v < 0 {
		return 0, fmt.Errorf("negative: %s", Quote(b))
	}
	return v, nil
}

// kddRaw holds the parsed, not yet scaled rows of one file. KDD files repeat
// lines heavily (145,586 distinct feature vectors among the 494,021 training
// lines), so features are stored once per distinct vector and lines refer
// to them; the scaled rows are shared the same way.
type kddRaw struct {
	num   []float64 // kddKept per distinct vector
	cat   []int32   // 3 per distinct vector, ids in the shared interner
	row   []int32   // per line: index of its distinct vector
	class []int8    // per line
}

func (r *kddRaw) rows() int     { return len(r.class) }
func (r *kddRaw) distinct() int { return len(r.cat) / 3 }

// kddKey identifies a distinct feature vector.
type kddKey struct {
	num [kddKept]float64
	cat [3]int32
}

// interner gives each distinct symbolic value of one field a stable id.
type interner struct {
	mu    sync.Mutex
	ids   map[string]int32
	names []string
}

func (in *interner) id(b []byte) int32 {
	if id, ok := in.ids[string(b)]; ok {
		return id
	}
	id := int32(len(in.names))
	in.ids[string(b)] = id
	in.names = append(in.names, string(b))
	return id
}

// kddParser carries what both files share: the attack categories and the
// symbolic vocabularies.
type kddParser struct {
	attack map[string]int8 // attack name → class index
	syms   [3]*interner
}

func newKDDParser(attackTypes io.Reader, name string) (*kddParser, error) {
	attack, err := parseAttackTypes(attackTypes, name)
	if err != nil {
		return nil, err
	}
	p := &kddParser{attack: attack}
	for i := range p.syms {
		p.syms[i] = &interner{ids: map[string]int32{}}
	}
	return p, nil
}

// parseAttackTypes reads training_attack_types: "name category" per line,
// category one of dos, probe, r2l, u2r; blank lines are skipped.
func parseAttackTypes(r io.Reader, name string) (map[string]int8, error) {
	out := map[string]int8{}
	sc := bufio.NewScanner(r)
	for ln := 1; sc.Scan(); ln++ {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s line %d: want \"attack category\", got %s", name, ln, Quote(sc.Bytes()))
		}
		c := slices.Index(KDDClassNames[1:kddUnknownClass], string(f[1]))
		if c < 0 {
			return nil, fmt.Errorf("%s line %d field 2 (category): %s is not dos, probe, r2l or u2r", name, ln, Quote(f[1]))
		}
		if string(f[0]) == "normal" {
			return nil, fmt.Errorf("%s line %d: \"normal\" listed as an attack", name, ln)
		}
		out[string(f[0])] = int8(c + 1)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no attack types", name)
	}
	return out, nil
}

// read parses one gzipped KDD file. Labels missing from the attack table are
// an error when strict (the training file) and class "unknown" otherwise.
func (p *kddParser) read(r io.Reader, name string, limit int, strict bool) (*kddRaw, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 1<<16)
	raw := &kddRaw{}
	var line kddLine
	local := [3]map[string]int32{{}, {}, {}} // per-goroutine cache of interned ids
	seen := map[kddKey]int32{}
	for ln := 1; limit <= 0 || raw.rows() < limit; ln++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%s line %d: longer than %d bytes", name, ln, br.Size())
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s line %d: %w", name, ln, err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(b) > 0 {
			if perr := line.parse(b); perr != nil {
				return nil, perr.at(name, ln)
			}
			class, ok := p.classOf(line.label)
			if !ok && strict {
				return nil, fmt.Errorf("%s line %d field 42 (label): attack %s is not in %s", name, ln, Quote(line.label), KDDAttackTypesFile)
			}
			key := kddKey{num: line.num}
			for i, s := range line.sym {
				id, ok := local[i][string(s)]
				if !ok {
					p.syms[i].mu.Lock()
					id = p.syms[i].id(s)
					p.syms[i].mu.Unlock()
					local[i][string(s)] = id
				}
				key.cat[i] = id
			}
			d, ok := seen[key]
			if !ok {
				d = int32(raw.distinct())
				seen[key] = d
				raw.num = append(raw.num, key.num[:]...)
				raw.cat = append(raw.cat, key.cat[:]...)
			}
			raw.row = append(raw.row, d)
			raw.class = append(raw.class, class)
		}
		if err != nil { // io.EOF
			break
		}
	}
	return raw, nil
}

func (p *kddParser) classOf(label []byte) (int8, bool) {
	if string(label) == "normal" {
		return 0, true
	}
	if c, ok := p.attack[string(label)]; ok {
		return c, true
	}
	return kddUnknownClass, false
}

// kddScaler is the preprocessing fitted on the training rows.
type kddScaler struct {
	opt      KDDOptions
	lo, hi   []float64 // per continuous slot, after log1p where kddLog
	col      [3][]int  // symbolic id → column offset within its block (−1 = unseen)
	blockOff [3]int    // first column of each one-hot block
	dim      int
	names    []string
}

func (p *kddParser) fit(train, test *kddRaw, opt KDDOptions) *kddScaler {
	s := &kddScaler{opt: opt, lo: make([]float64, kddNumCont), hi: make([]float64, kddNumCont)}
	for j := range s.lo {
		s.lo[j], s.hi[j] = math.Inf(1), math.Inf(-1)
	}
	for r := 0; r < train.distinct(); r++ {
		row := train.num[r*kddKept : r*kddKept+kddNumCont]
		for j, v := range row {
			v = kddTransform(j, v)
			s.lo[j] = math.Min(s.lo[j], v)
			s.hi[j] = math.Max(s.hi[j], v)
		}
	}
	for _, f := range kddCols {
		if kddKinds[f] == kddContinuous {
			s.names = append(s.names, kddFieldNames[f])
		} else if opt.OneHotBinary {
			s.names = append(s.names, kddFieldNames[f]+"=0", kddFieldNames[f]+"=1")
		} else {
			s.names = append(s.names, kddFieldNames[f])
		}
	}
	for i := range s.col {
		seen := make([]bool, len(p.syms[i].names))
		mark := func(raw *kddRaw) {
			for r := 0; r < raw.distinct(); r++ {
				seen[raw.cat[r*3+i]] = true
			}
		}
		mark(train)
		if opt.VocabFromTest && test != nil {
			mark(test)
		}
		var vocab []string
		for id, ok := range seen {
			if ok {
				vocab = append(vocab, p.syms[i].names[id])
			}
		}
		slices.Sort(vocab)
		s.blockOff[i] = len(s.names)
		s.col[i] = make([]int, len(seen))
		for id := range s.col[i] {
			s.col[i][id] = -1
			if k, ok := slices.BinarySearch(vocab, p.syms[i].names[id]); ok && seen[id] {
				s.col[i][id] = k
			}
		}
		for _, v := range vocab {
			s.names = append(s.names, kddFieldNames[kddSym[i]]+"="+v)
		}
	}
	s.dim = len(s.names)
	return s
}

// kddTransform applies log1p to heavy-tailed counts (slot j continuous).
func kddTransform(j int, v float64) float64 {
	if kddLog[j] {
		return math.Log1p(v)
	}
	return v
}

// apply turns raw rows into a Dataset: min-max scaling to [0, 1] with the
// training range (test values outside it are clamped), binary columns,
// one-hot blocks (a category unseen in the vocabulary gives an all-zero
// block), then projection onto the unit ball. Lines with identical features
// share one row slice.
func (s *kddScaler) apply(raw *kddRaw, name string) *Dataset {
	nd := raw.distinct()
	back := make([]float64, nd*s.dim)
	rows := make([][]float64, nd)
	for r := range rows {
		x := back[r*s.dim : (r+1)*s.dim : (r+1)*s.dim]
		s.row(x, raw.num[r*kddKept:(r+1)*kddKept], raw.cat[r*3:(r+1)*3])
		rows[r] = x
	}
	n := raw.rows()
	d := &Dataset{
		Name: name, X: make([][]float64, n), Y: make([]float64, n), Class: make([]int, n),
		ClassNames: KDDClassNames, FeatureNames: s.names,
	}
	for r := range n {
		d.X[r] = rows[raw.row[r]]
		d.Class[r] = int(raw.class[r])
		d.Y[r] = -1
		if raw.class[r] != 0 {
			d.Y[r] = 1
		}
	}
	return d
}

// row writes the preprocessed features of one raw vector into x (zeroed).
func (s *kddScaler) row(x, num []float64, cat []int32) {
	for j := 0; j < kddNumCont; j++ {
		x[j] = s.scale(j, num[j])
	}
	c := kddNumCont
	for j := kddNumCont; j < kddKept; j++ {
		if s.opt.OneHotBinary {
			x[c+int(num[j])] = 1
			c += 2
		} else {
			x[c] = num[j]
			c++
		}
	}
	for i, id := range cat {
		if int(id) < len(s.col[i]) && s.col[i][id] >= 0 {
			x[s.blockOff[i]+s.col[i][id]] = 1
		}
	}
	ProjectUnitBall(x)
}

func (s *kddScaler) scale(j int, v float64) float64 {
	lo, hi := s.lo[j], s.hi[j]
	if !(hi > lo) {
		return 0 // constant on the training data: carries no information
	}
	return min(1, max(0, (kddTransform(j, v)-lo)/(hi-lo)))
}

// LoadKDD loads KDD Cup 99: the 10 % file as training data and corrected.gz
// as test data. dir is the kddcup99 folder or the data root holding it.
//
// Preprocessing (fitted on the training file only, then applied to both):
// num_outbound_cmds and is_host_login are validated and dropped (Ghassemi et
// al. §5); of the 33 other continuous features, the 18 counts, byte counts
// and durations get log1p (the 15 *_rate fields, already in [0, 1], do not),
// then all 33 get min-max scaling to [0, 1] with the training minimum and
// maximum, test values clamped to [0, 1];
// land, logged_in and is_guest_login stay 0/1 columns (or one-hot pairs, see
// KDDOptions.OneHotBinary); protocol_type, service and flag are one-hot
// encoded over the values seen in training, in sorted order, and a test value
// never seen there (service "icmp", 2 lines of corrected.gz) gets an
// all-zero block. Finally each row
// is projected onto the unit ℓ2 ball. With the zero KDDOptions the dimension
// is 116 (33 continuous + 3 binary + 3 + 66 + 11 one-hot); the paper's 120 is
// reached with OneHotBinary and VocabFromTest.
//
// Y is −1 for normal and +1 for any attack. Class indexes KDDClassNames by
// training_attack_types; test attacks not listed there get "unknown". A
// training-file attack not listed there is an error. kddcup.names, when
// present, is checked against the 41-feature schema first (CheckKDDNames).
//
// Lines with identical features share one row slice (the files repeat lines
// heavily; this keeps the full load near 200 MB): treat X as read-only.
func LoadKDD(dir string, opt KDDOptions) (train, test *Dataset, err error) {
	dir, err = findDir(dir, "kddcup99", KDDTrainFile)
	if err != nil {
		return nil, nil, err
	}
	open := func(name string) (*os.File, error) { return os.Open(filepath.Join(dir, name)) }
	if nf, err := open(KDDNamesFile); err == nil {
		err = CheckKDDNames(nf, KDDNamesFile)
		nf.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	at, err := open(KDDAttackTypesFile)
	if err != nil {
		return nil, nil, err
	}
	defer at.Close()
	tr, err := open(KDDTrainFile)
	if err != nil {
		return nil, nil, err
	}
	defer tr.Close()
	te, err := open(KDDTestFile)
	if err != nil {
		return nil, nil, err
	}
	defer te.Close()
	return LoadKDDReaders(
		NamedReader{KDDTrainFile, tr}, NamedReader{KDDTestFile, te},
		NamedReader{KDDAttackTypesFile, at}, opt)
}

// CheckKDDNames checks a kddcup.names file against the schema LoadKDD
// assumes: after the first line (the label list), one "name: continuous." or
// "name: symbolic." line per feature, in the order and with the types of
// kddFieldNames. Blank lines are skipped.
func CheckKDDNames(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	f := 0
	for ln := 1; sc.Scan(); ln++ {
		line := bytes.TrimSpace(sc.Bytes())
		if ln == 1 || len(line) == 0 {
			continue
		}
		field, typ, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			return fmt.Errorf("%s line %d: want \"name: type.\", got %s", name, ln, Quote(line))
		}
		if f >= len(kddFieldNames) {
			return fmt.Errorf("%s line %d: more than %d features", name, ln, len(kddFieldNames))
		}
		wantTyp := "continuous."
		if kddKinds[f] == kddSymbolic || kddZeroOne[f] {
			wantTyp = "symbolic."
		}
		if string(field) != kddFieldNames[f] || string(typ) != wantTyp {
			return fmt.Errorf("%s line %d: %s, want feature %d to be \"%s: %s\"", name, ln, Quote(line), f+1, kddFieldNames[f], wantTyp)
		}
		f++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if f != len(kddFieldNames) {
		return fmt.Errorf("%s: %d features, want %d", name, f, len(kddFieldNames))
	}
	return nil
}

// NamedReader is a reader plus the name its errors should carry.
type NamedReader struct {
	// Name is the input's name in error messages (a file name, say).
	Name string
	// R is the input.
	R io.Reader
}

// LoadKDDReaders is LoadKDD on already opened inputs: gzipped training and
// test files and the training_attack_types text. test.R may be nil, in which
// case test is nil.
func LoadKDDReaders(trainFile, testFile, attackTypes NamedReader, opt KDDOptions) (train, test *Dataset, err error) {
	if opt.Limit < 0 {
		return nil, nil, fmt.Errorf("KDD limit %d is negative", opt.Limit)
	}
	p, err := newKDDParser(attackTypes.R, attackTypes.Name)
	if err != nil {
		return nil, nil, err
	}
	var rawTrain, rawTest *kddRaw
	var errTrain, errTest error
	var wg sync.WaitGroup
	if testFile.R != nil {
		wg.Go(func() { rawTest, errTest = p.read(testFile.R, testFile.Name, opt.Limit, false) })
	}
	rawTrain, errTrain = p.read(trainFile.R, trainFile.Name, opt.Limit, true)
	wg.Wait()
	if errTrain != nil {
		return nil, nil, errTrain
	}
	if errTest != nil {
		return nil, nil, errTest
	}
	if rawTrain.rows() == 0 {
		return nil, nil, fmt.Errorf("%s: no rows", trainFile.Name)
	}
	s := p.fit(rawTrain, rawTest, opt)
	train = s.apply(rawTrain, "kdd99-train")
	if rawTest != nil {
		test = s.apply(rawTest, "kdd99-test")
	}
	return train, test, nil
}

// findDir returns dir if it holds file, else dir/sub if that does.
func findDir(dir, sub, file string) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, sub)} {
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no %s in %s or %s", file, dir, filepath.Join(dir, sub))
}
