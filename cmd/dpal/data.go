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
	f := dataDescribeCmd.Flags()
	f.String("dataset", "", "kdd99|mnist|fashion-mnist|nab|csv|libsvm|demo (required)")
	f.String("data-dir", data.DefaultDir, "data root holding kddcup99/, mnist/, fashion_mnist/, nab/")
	f.String("file", "", "input file for --dataset csv or libsvm")
	f.Bool("header", false, "csv: the first line names the columns")
	f.Int("label-column", -1, "csv: 1-based label column, 0 = none, -1 = last")
	f.Bool("zero-is-negative", false, "csv: read label 0 as -1 (0/1-labelled files); otherwise label 0 is an error")
	f.Int("dim", 0, "libsvm: feature dimension (0 = largest index)")
	f.String("pair", "0,9", "mnist/fashion-mnist: the two labels, first = -1, second = +1")
	f.Int("pool", data.IDXPairBlock, "mnist/fashion-mnist: side of the pixel blocks averaged into one feature (1 = raw pixels)")
	f.Bool("kdd-paper-encoding", false, "kdd99/demo: one-hot binary features and test-file vocabularies (the paper's 120 dimensions)")
	f.Bool("json", false, "print one JSON object")
	dataCmd.AddCommand(dataDescribeCmd)
	rootCmd.AddCommand(dataCmd)
}

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
	f := cmd.Flags()
	name, _ := f.GetString("dataset")
	dir, _ := f.GetString("data-dir")
	asJSON, _ := f.GetBool("json")
	start := time.Now()
	res, err := describeDataset(cmd, name, dir)
	if err != nil {
		return err
	}
	res.LoadSeconds = time.Since(start).Seconds()
	if asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	printDescribe(cmd.OutOrStdout(), res)
	return nil
}

func describeDataset(cmd *cobra.Command, name, dir string) (*describeResult, error) {
	f := cmd.Flags()
	res := &describeResult{Dataset: name, Source: dir}
	var train, test *data.Dataset
	var err error
	paper, _ := f.GetBool("kdd-paper-encoding")
	kddOpt := data.KDDOptions{OneHotBinary: paper, VocabFromTest: paper}
	switch name {
	case "":
		return nil, fmt.Errorf("--dataset is required (kdd99|mnist|fashion-mnist|nab|csv|libsvm|demo)")
	case "kdd99":
		train, test, err = data.LoadKDD(dir, kddOpt)
	case "demo":
		res.Source = "embedded"
		train, test, err = data.DemoOptions(kddOpt)
	case "mnist", "fashion-mnist":
		train, test, err = describeIDX(cmd, name, dir, res)
	case "nab":
		res.NAB, err = describeNAB(dir)
	case "csv", "libsvm":
		train, err = describeFile(cmd, name, res)
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

func describeIDX(cmd *cobra.Command, name, dir string, res *describeResult) (train, test *data.Dataset, err error) {
	pair, _ := cmd.Flags().GetString("pair")
	block, _ := cmd.Flags().GetInt("pool")
	a, b, err := parsePair(pair)
	if err != nil {
		return nil, nil, err
	}
	sub := map[string]string{"mnist": data.MNISTFolder, "fashion-mnist": data.FashionMNISTFolder}[name]
	if _, err := os.Stat(filepath.Join(dir, sub, data.IDXTrainImages)); err == nil {
		dir = filepath.Join(dir, sub)
	}
	res.Source = dir
	return data.LoadIDXPair(dir, a, b, block)
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

func describeFile(cmd *cobra.Command, name string, res *describeResult) (*data.Dataset, error) {
	f := cmd.Flags()
	path, _ := f.GetString("file")
	if path == "" {
		return nil, fmt.Errorf("--dataset %s needs --file", name)
	}
	res.Source = path
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if name == "libsvm" {
		dim, _ := f.GetInt("dim")
		return data.LoadLibSVM(in, dim)
	}
	header, _ := f.GetBool("header")
	label, _ := f.GetInt("label-column")
	zeroNeg, _ := f.GetBool("zero-is-negative")
	return data.LoadCSV(in, data.CSVOptions{Name: filepath.Base(path), Header: header, LabelColumn: label, ZeroIsNegative: zeroNeg})
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
