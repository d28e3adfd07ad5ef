package data

import (
	"bytes"
	"compress/gzip"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/vec"
)

const kddGood = "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal."

// kddWith returns kddGood with field f (1-based) replaced by v.
func kddWith(fields map[int]string) string {
	f := strings.Split(kddGood, ",")
	for i, v := range fields {
		f[i-1] = v
	}
	return strings.Join(f, ",")
}

func TestKDDSchema(t *testing.T) {
	if len(kddCols) != kddKept || kddNumCont != 33 {
		t.Fatalf("%d kept fields (%d continuous), want %d (33)", len(kddCols), kddNumCont, kddKept)
	}
	var logged []string
	for j, f := range kddCols {
		if kddLog[j] {
			logged = append(logged, kddFieldNames[f])
		}
	}
	if len(logged) != 18 || logged[0] != "duration" || slices.Contains(logged, "serror_rate") || slices.Contains(logged, "land") {
		t.Fatalf("log1p fields: %v", logged)
	}
}

func TestKDDLineParse(t *testing.T) {
	tests := []struct {
		name, line, wantErr string
	}{
		{"good", kddGood, ""},
		{"label without dot", strings.TrimSuffix(kddGood, "."), ""},
		{"rate with decimals", kddWith(map[int]string{25: "0.5"}), ""},
		{"bytes not a number", kddWith(map[int]string{5: "abc"}), `field 5 (src_bytes): not a number: "abc"`},
		{"negative", kddWith(map[int]string{1: "-3"}), `field 1 (duration): negative: "-3"`},
		{"nan", kddWith(map[int]string{24: "NaN"}), `field 24 (srv_count): not a number: "NaN"`},
		{"inf", kddWith(map[int]string{6: "+Inf"}), `field 6 (dst_bytes): not a number`},
		{"empty number", kddWith(map[int]string{8: ""}), `field 8 (wrong_fragment): not a number: ""`},
		{"binary not 0/1", kddWith(map[int]string{7: "2"}), `field 7 (land): not 0 or 1: "2"`},
		{"dropped field still checked", kddWith(map[int]string{20: "x"}), `field 20 (num_outbound_cmds)`},
		{"dropped binary still checked", kddWith(map[int]string{21: "y"}), `field 21 (is_host_login): not 0 or 1`},
		{"empty service", kddWith(map[int]string{3: ""}), `field 3 (service): empty`},
		{"empty label", kddWith(map[int]string{42: "."}), `field 42 (label): empty`},
		{"too few fields", "0,tcp,http", "3 fields, want 42"},
		{"too many fields", kddGood + ",x", "more than 42 fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p kddLine
			err := p.parse([]byte(tc.line))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	var p kddLine
	if err := p.parse([]byte(kddGood)); err != nil {
		t.Fatal(err)
	}
	if p.num[kddSlot[4]] != 181 || p.num[kddSlot[5]] != 5450 || p.num[kddSlot[11]] != 1 || p.num[kddSlot[33]] != 1 {
		t.Fatalf("values: %v", p.num)
	}
	if string(p.sym[1]) != "http" || string(p.label) != "normal" {
		t.Fatalf("symbols %q label %q", p.sym, p.label)
	}
}

func FuzzKDDLine(f *testing.F) {
	f.Add([]byte(kddGood))
	f.Add([]byte(kddWith(map[int]string{5: "1e308", 25: "0.25"})))
	f.Add([]byte("0,,,,"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var p kddLine
		if err := p.parse(line); err != nil {
			if !strings.Contains(err.Error(), "field") {
				t.Fatalf("error without field: %v", err)
			}
			return
		}
		for _, v := range p.num {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("accepted bad value %v", v)
			}
		}
		if len(p.label) == 0 {
			t.Fatal("accepted empty label")
		}
	})
}

func gzipLines(t testing.TB, lines ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, l := range lines {
		zw.Write([]byte(l + "\n"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const testAttackTypes = "smurf dos\nneptune dos\nsatan probe\n\n"

func loadSynthetic(t *testing.T, train, test []string, opt KDDOptions) (*Dataset, *Dataset, error) {
	t.Helper()
	return LoadKDDReaders(
		NamedReader{"train.gz", bytes.NewReader(gzipLines(t, train...))},
		NamedReader{"test.gz", bytes.NewReader(gzipLines(t, test...))},
		NamedReader{"types", strings.NewReader(testAttackTypes)}, opt)
}

func TestLoadKDDSynthetic(t *testing.T) {
	train := []string{
		kddGood,
		kddWith(map[int]string{2: "icmp", 3: "ecr_i", 5: "1032", 6: "0", 12: "0", 42: "smurf."}),
		kddWith(map[int]string{3: "private", 4: "S0", 5: "0", 6: "0", 12: "0", 42: "neptune."}),
		kddWith(map[int]string{5: "999", 42: "normal."}),
	}
	test := []string{
		kddWith(map[int]string{2: "icmp", 3: "icmp", 42: "smurf."}),       // service unseen in training
		kddWith(map[int]string{5: "99999999", 42: "mailbomb."}),           // attack unknown to training
		kddWith(map[int]string{4: "RSTO", 5: "0", 6: "0", 42: "normal."}), // flag unseen
	}
	tr, te, err := loadSynthetic(t, train, test, KDDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 33 continuous + 3 binary + protocols {icmp,tcp} + services {ecr_i,http,private} + flags {S0,SF}.
	if tr.Dim() != 43 || te.Dim() != 43 || len(tr.FeatureNames) != 43 {
		t.Fatalf("dims %d/%d, names %d", tr.Dim(), te.Dim(), len(tr.FeatureNames))
	}
	if !slices.Equal(tr.Y, []float64{-1, 1, 1, -1}) || !slices.Equal(te.Y, []float64{1, 1, -1}) {
		t.Fatalf("labels %v %v", tr.Y, te.Y)
	}
	if !slices.Equal(tr.Class, []int{0, 1, 1, 0}) || !slices.Equal(te.Class, []int{1, kddUnknownClass, 0}) {
		t.Fatalf("classes %v %v", tr.Class, te.Class)
	}
	col := func(name string) int { return slices.Index(tr.FeatureNames, name) }
	for _, name := range []string{"service=ecr_i", "service=http", "service=private", "flag=S0", "flag=SF", "protocol_type=icmp", "land", "src_bytes"} {
		if col(name) < 0 {
			t.Fatalf("no feature %q in %v", name, tr.FeatureNames)
		}
	}
	if col("service=icmp") >= 0 || col("flag=RSTO") >= 0 {
		t.Fatal("test-only category in the training vocabulary")
	}
	// The unseen service leaves the service block empty; the unseen flag the flag block.
	for _, c := range []int{col("service=ecr_i"), col("service=http"), col("service=private")} {
		if te.X[0][c] != 0 {
			t.Fatalf("unseen service set column %s", tr.FeatureNames[c])
		}
	}
	if te.X[2][col("flag=S0")] != 0 || te.X[2][col("flag=SF")] != 0 {
		t.Fatal("unseen flag set a flag column")
	}
	// Test src_bytes above the training maximum is clamped to the maximum's scaled value (1
	// before projection): row 1 and a training-max row differ only in src_bytes and label.
	sb := col("src_bytes")
	if te.X[1][sb] <= 0 {
		t.Fatal("src_bytes not set")
	}
	for _, ds := range []*Dataset{tr, te} {
		for i, x := range ds.X {
			if n := vec.Norm(x); n > 1 {
				t.Fatalf("%s row %d norm %v", ds.Name, i, n)
			}
		}
		if err := ds.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// Paper encoding: binary pairs and the test vocabulary.
	tr2, _, err := loadSynthetic(t, train, test, KDDOptions{OneHotBinary: true, VocabFromTest: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr2.Dim() != 43+3+2 || !slices.Contains(tr2.FeatureNames, "service=icmp") || !slices.Contains(tr2.FeatureNames, "land=1") {
		t.Fatalf("paper encoding: dim %d, names %v", tr2.Dim(), tr2.FeatureNames)
	}
	// Identical lines share one row.
	tr3, _, err := loadSynthetic(t, []string{kddGood, kddGood}, nil, KDDOptions{})
	if err != nil || &tr3.X[0][0] != &tr3.X[1][0] {
		t.Fatalf("duplicate lines not shared (err %v)", err)
	}
}

func TestLoadKDDErrors(t *testing.T) {
	tests := []struct {
		name    string
		train   []string
		types   string
		opt     KDDOptions
		wantErr string
	}{
		{"bad field", []string{kddGood, kddGood, kddWith(map[int]string{5: "abc"})}, testAttackTypes, KDDOptions{},
			`train.gz line 3 field 5 (src_bytes): not a number: "abc"`},
		{"short line", []string{"1,2,3"}, testAttackTypes, KDDOptions{}, "train.gz line 1: 3 fields, want 42"},
		{"unknown training attack", []string{kddWith(map[int]string{42: "mailbomb."})}, testAttackTypes, KDDOptions{},
			`train.gz line 1 field 42 (label): attack "mailbomb" is not in training_attack_types`},
		{"bad category", []string{kddGood}, "smurf dos\nx y\n", KDDOptions{}, `types line 2 field 2 (category): "y"`},
		{"bad types line", []string{kddGood}, "smurf\n", KDDOptions{}, `types line 1: want "attack category"`},
		{"no rows", nil, testAttackTypes, KDDOptions{}, "train.gz: no rows"},
		{"negative limit", []string{kddGood}, testAttackTypes, KDDOptions{Limit: -1}, "limit -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadKDDReaders(
				NamedReader{"train.gz", bytes.NewReader(gzipLines(t, tc.train...))},
				NamedReader{},
				NamedReader{"types", strings.NewReader(tc.types)}, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	_, _, err := LoadKDDReaders(NamedReader{"train.gz", strings.NewReader("not gzip")}, NamedReader{},
		NamedReader{"types", strings.NewReader(testAttackTypes)}, KDDOptions{})
	if err == nil || !strings.Contains(err.Error(), "train.gz") {
		t.Fatalf("not-gzip error %v", err)
	}
	if _, _, err := LoadKDD(t.TempDir(), KDDOptions{}); err == nil || !strings.Contains(err.Error(), KDDTrainFile) {
		t.Fatalf("missing dir error %v", err)
	}
}

func TestLoadKDDLimit(t *testing.T) {
	tr, te, err := loadSynthetic(t, []string{kddGood, kddGood, kddGood}, []string{kddGood, kddGood}, KDDOptions{Limit: 2})
	if err != nil || tr.Len() != 2 || te.Len() != 2 {
		t.Fatalf("limit: %v %v %v", tr, te, err)
	}
}

// TestLoadKDDReal checks the full files against the counts in
// kddcup99/PROVENANCE.md and the dimensions documented on LoadKDD.
func TestLoadKDDReal(t *testing.T) {
	dir := testDataDir(t)
	tr, te, err := LoadKDD(dir, KDDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(d *Dataset, rows, normal, dim int, classes []int) {
		t.Helper()
		got := d.Describe()
		if got.Rows != rows || got.Negative != normal || got.Dims != dim || got.MaxNorm > 1 {
			t.Fatalf("%s: %+v", d.Name, got)
		}
		for i, c := range got.Classes {
			if c.Count != classes[i] {
				t.Fatalf("%s: classes %+v, want %v", d.Name, got.Classes, classes)
			}
		}
	}
	check(tr, 494021, 97278, 116, []int{97278, 391458, 4107, 1126, 52, 0})
	check(te, 311029, 60593, 116, []int{60593, 223298, 2377, 5993, 39, 18729})

	demoTr, _, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(demoTr.FeatureNames, tr.FeatureNames) {
		t.Fatalf("demo features differ from the full data's:\n%v\n%v", demoTr.FeatureNames, tr.FeatureNames)
	}

	tr, te, err = LoadKDD(dir+"/kddcup99", KDDOptions{OneHotBinary: true, VocabFromTest: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Dim() != 120 || te.Dim() != 120 {
		t.Fatalf("paper encoding: dims %d/%d, want 120", tr.Dim(), te.Dim())
	}
}

func kddNamesText() string {
	var b strings.Builder
	b.WriteString("back,normal.\n\n")
	for f, name := range kddFieldNames {
		typ := "continuous."
		if kddKinds[f] == kddSymbolic || kddZeroOne[f] {
			typ = "symbolic."
		}
		b.WriteString(name + ": " + typ + "\n")
	}
	return b.String()
}

func TestCheckKDDNames(t *testing.T) {
	good := kddNamesText()
	tests := []struct{ name, in, wantErr string }{
		{"good", good, ""},
		{"wrong type", strings.Replace(good, "duration: continuous.", "duration: symbolic.", 1), `line 3: "duration: symbolic."`},
		{"renamed", strings.Replace(good, "src_bytes:", "bytes:", 1), `want feature 5 to be "src_bytes: continuous."`},
		{"short", strings.Join(strings.Split(good, "\n")[:10], "\n"), "8 features, want 41"},
		{"extra", good + "x: continuous.\n", "more than 41 features"},
		{"no colon", strings.Replace(good, "land: symbolic.", "land", 1), `want "name: type."`},
	}
	for _, tc := range tests {
		err := CheckKDDNames(strings.NewReader(tc.in), "names")
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func FuzzKDDNames(f *testing.F) {
	f.Add(kddNamesText())
	f.Add("x\nduration: continuous.\n")
	f.Fuzz(func(t *testing.T, in string) {
		_ = CheckKDDNames(strings.NewReader(in), "names") // must not panic
	})
}
