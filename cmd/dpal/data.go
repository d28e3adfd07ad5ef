package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dpal-dev/dpal/data"
	"github.com/spf13/cobra"
)

var dataCmd = groupCommand("data", "Inspect the datasets dpal can load")

var dataDescribeCmd = &cobra.Command{
	Use:   "describe",
	Short: "Print rows, dimensions and class balance of a dataset's train and test parts",
	Long: `Loads a dataset with dpal's preprocessing and prints its size, feature
dimension and class balance.

  kdd99          KDD Cup 99 (10 % train, corrected test), from DIR/kddcup99
  mnist          MNIST pair (--pair, default 0,9), pixels centred at 0.5 and averaged
                 over --pool×--pool blocks (default 4: 49 features; 1 = raw pixels)
  fashion-mnist  Fashion-MNIST pair, same options
  nab            NAB series: series count, rows, labelled anomaly points
  csv            numeric CSV --file F (--header, --label-column, --zero-is-negative)
  libsvm         LibSVM file --file F (--dim)
  demo           the KDD sample bundled in the binary`,
	Args: cobra.NoArgs,
	RunE: runDataDescribe,
}

func init() {
	o, f := &describeOpts, dataDescribeCmd.Flags()
	f.StringVar(&o.Dataset, "dataset", "", "kdd99|mnist|fashion-mnist|nab|csv|libsvm|demo (required)")
	f.StringVar(&o.Dir, "data-dir", data.DefaultDir, "data root holding kddcup99/, mnist/, fashion_mnist/, nab/")
	f.StringVar(&o.File, "file", "", "input file for --dataset csv or libsvm")
	f.BoolVar(&o.CSV.Header, "header", false, "csv: the first line names the columns")
	f.IntVar(&o.CSV.LabelColumn, "label-column", -1, "csv: 1-based label column, 0 = none, -1 = last")
	f.BoolVar(&o.CSV.ZeroIsNegative, "zero-is-negative", false, "csv: read label 0 as -1 (0/1-labelled files); otherwise label 0 is an error")
	f.IntVar(&o.Dim, "dim", 0, "libsvm: feature dimension (0 = largest index)")
	f.StringVar(&o.Pair, "pair", "0,9", "mnist/fashion-mnist: the two labels, first = -1, second = +1")
	f.IntVar(&o.Block, "pool", data.IDXPairBlock, "mnist/fashion-mnist: side of the pixel blocks averaged into one feature (1 = raw pixels)")
	f.BoolVar(&o.KDDPaper, "kdd-paper-encoding", false, "kdd99/demo: one-hot binary features and test-file vocabularies (the paper's 120 dimensions)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	dataCmd.AddCommand(dataDescribeCmd)
	rootCmd.AddCommand(dataCmd)
}

// describeOptions are data describe's flags, bound in its init.
type describeOptions struct {
	Dataset string
	// Dir is the data root, File a csv or libsvm file.
	Dir, File string
	// CSV holds --header, --label-column and --zero-is-negative (its Name
	// is the file's).
	CSV data.CSVOptions
	// Dim is a libsvm file's dimension (0: its largest index).
	Dim int
	// Pair and Block are an IDX pair's labels and pixel block side
	// (--pool).
	Pair  string
	Block int
	// KDDPaper is --kdd-paper-encoding.
	KDDPaper bool
	JSON     bool
}

var describeOpts describeOptions

// describeResult is what `dpal data describe` prints.
type describeResult struct {
	Dataset     string            `json:"dataset"`
	Source      string            `json:"source"`
	Train       *data.Description `json:"train,omitempty"`
	Test        *data.Description `json:"test,omitempty"`
	NAB         *nabSummary       `json:"nab,omitempty"`
	LoadSeconds float64           `json:"load_seconds"`
}

type nabSummary struct {
	Series            int `json:"series"`
	Rows              int `json:"rows"`
	Anomalies         int `json:"anomalies"`
	SeriesWithAnomaly int `json:"series_with_anomaly"`
	RowsInWindows     int `json:"rows_in_windows"`
}

func runDataDescribe(cmd *cobra.Command, _ []string) error {
	o := &describeOpts
	start := time.Now()
	res, err := describeDataset(o)
	if err != nil {
		return err
	}
	res.LoadSeconds = time.Since(start).Seconds()
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	printDescribe(cmd.OutOrStdout(), res)
	return nil
}

// describeDataset loads and describes the dataset o names.
func describeDataset(o *describeOptions) (*describeResult, error) {
	name, dir := o.Dataset, o.Dir
	res := &describeResult{Dataset: name, Source: dir}
	var train, test *data.Dataset
	var err error
	kddOpt := data.KDDOptions{OneHotBinary: o.KDDPaper, VocabFromTest: o.KDDPaper}
	switch name {
	case "":
		return nil, fmt.Errorf("--dataset is required (kdd99|mnist|fashion-mnist|nab|csv|libsvm|demo)")
	case "kdd99":
		train, test, err = data.LoadKDD(dir, kddOpt)
	case "demo":
		res.Source = "embedded"
		train, test, err = data.DemoOptions(kddOpt)
	case "mnist", "fashion-mnist":
		train, test, err = describeIDX(o, res)
	case "nab":
		res.NAB, err = describeNAB(dir)
	case "csv", "libsvm":
		train, err = describeFile(o, res)
	default:
		return nil, fmt.Errorf("--dataset %q: want kdd99, mnist, fashion-mnist, nab, csv, libsvm or demo", name)
	}
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		d   *data.Dataset
		out **data.Description
	}{{train, &res.Train}, {test, &res.Test}} {
		if p.d != nil {
			desc := p.d.Describe()
			*p.out = &desc
		}
	}
	return res, nil
}

// describeIDX loads the --pair of MNIST or Fashion-MNIST, from its folder
// under --data-dir if there is one, else from --data-dir itself.
func describeIDX(o *describeOptions, res *describeResult) (train, test *data.Dataset, err error) {
	a, b, err := parsePair(o.Pair)
	if err != nil {
		return nil, nil, err
	}
	dir := o.Dir
	sub := map[string]string{"mnist": data.MNISTFolder, "fashion-mnist": data.FashionMNISTFolder}[o.Dataset]
	if _, err := os.Stat(filepath.Join(dir, sub, data.IDXTrainImages)); err == nil {
		dir = filepath.Join(dir, sub)
	}
	res.Source = dir
	return data.LoadIDXPair(dir, a, b, o.Block)
}

func parsePair(s string) (a, b int, err error) {
	as, bs, ok := strings.Cut(s, ",")
	if ok {
		a, err = strconv.Atoi(strings.TrimSpace(as))
	}
	if ok && err == nil {
		b, err = strconv.Atoi(strings.TrimSpace(bs))
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("--pair %q: want two labels like 0,9", s)
	}
	return a, b, nil
}

func describeNAB(dir string) (*nabSummary, error) {
	series, err := data.LoadNAB(dir)
	if err != nil {
		return nil, err
	}
	s := &nabSummary{Series: len(series)}
	for _, ser := range series {
		s.Rows += len(ser.Value)
		n := ser.Anomalies()
		s.Anomalies += n
		for _, w := range ser.InWindow {
			if w {
				s.RowsInWindows++
			}
		}
		if n > 0 {
			s.SeriesWithAnomaly++
		}
	}
	return s, nil
}

// describeFile loads the csv or libsvm --file.
func describeFile(o *describeOptions, res *describeResult) (*data.Dataset, error) {
	path := o.File
	if path == "" {
		return nil, fmt.Errorf("--dataset %s needs --file", o.Dataset)
	}
	res.Source = path
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if o.Dataset == "libsvm" {
		return data.LoadLibSVM(in, o.Dim)
	}
	opt := o.CSV
	opt.Name = filepath.Base(path)
	return data.LoadCSV(in, opt)
}

func printDescribe(w io.Writer, r *describeResult) {
	fmt.Fprintf(w, "dataset %s (%s), loaded in %.2fs\n", r.Dataset, r.Source, r.LoadSeconds)
	if r.NAB != nil {
		fmt.Fprintf(w, "  series %d, rows %d, anomaly points %d (in %d series), rows in scoring windows %d\n",
			r.NAB.Series, r.NAB.Rows, r.NAB.Anomalies, r.NAB.SeriesWithAnomaly, r.NAB.RowsInWindows)
	}
	for _, d := range []*data.Description{r.Train, r.Test} {
		if d == nil {
			continue
		}
		fmt.Fprintf(w, "  %-22s rows %d, dims %d, +1: %d, -1: %d, max norm %.4g\n",
			d.Name, d.Rows, d.Dims, d.Positive, d.Negative, d.MaxNorm)
		for _, c := range d.Classes {
			fmt.Fprintf(w, "    %-10s %d\n", c.Name, c.Count)
		}
	}
}
