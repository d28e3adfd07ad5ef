package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/active/pool"
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model/nn"
)

func init() {
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Classify a dataset's test part with a model saved by `dpal train`",
		Long: `predict loads a model written by dpal train --out, classifies the test part
of --data (the same dataset names and flags as train; a model trained with
--features scatter is applied to the same features, through the default
cache directory) and prints its accuracy
and per-class recall; --probs FILE writes each test row's class
probabilities as CSV. A trained model is a released value: using it costs no
further privacy.`,
		Args: cobra.NoArgs,
		RunE: runPredict,
	}
	o, f := &predictOpts, cmd.Flags()
	f.StringVar(&o.Model, "model", "", "model file written by dpal train --out (required)")
	f.StringVar(&o.Data, "data", "", "mnist|fashion-mnist|kdd99-5class|csv|libsvm (required)")
	dataSourceFlags(f, &o.Source, "the file the model was trained on (its 20 % test split is used)", "test file")
	f.StringVar(&o.Probs, "probs", "", "write class probabilities per test row to this CSV file; an existing file needs --force")
	forceFlag(f)
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	rootCmd.AddCommand(cmd)
}

// predictOptions are predict's flags, bound in its init.
type predictOptions struct {
	// Model is the model file's path.
	Model  string
	Data   string
	Source data.Source
	// Probs is where the class probabilities go (empty: nowhere).
	Probs string
	JSON  bool
}

var predictOpts predictOptions

type predictOutput struct {
	Model      string    `json:"model"`
	Dataset    string    `json:"dataset"`
	Rows       int       `json:"rows"`
	Accuracy   float64   `json:"accuracy"`
	Recall     []float64 `json:"recall"`
	ClassNames []string  `json:"class_names"`
	Probs      string    `json:"probs,omitempty"`
}

func runPredict(cmd *cobra.Command, _ []string) error {
	o := &predictOpts
	path, name := o.Model, o.Data
	if path == "" {
		return fmt.Errorf("--model is required")
	}
	if err := checkTrainData(name); err != nil {
		return err
	}
	if err := checkPaths(cmd, []string{"probs"}, []string{"model", "file", "test-file"}); err != nil {
		return err
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	net, meta, err := nn.Load(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("--model %s: %w", path, err)
	}
	_, test, _, err := loadTrainData(o.Source, name)
	if err != nil {
		return err
	}
	if test, err = modelFeatures(meta, test); err != nil {
		return fmt.Errorf("--model %s: %w", path, err)
	}
	spec := net.Spec()
	if test.Dim() != spec.Inputs || len(test.ClassNames) > spec.Classes {
		return fmt.Errorf("--data %s has %d features and %d classes, the model %d and %d", name, test.Dim(), len(test.ClassNames), spec.Inputs, spec.Classes)
	}
	probs, err := net.Predict(test.X)
	if err != nil {
		return err
	}
	pred := make([]int, len(probs))
	for i, p := range probs {
		pred[i] = nn.Argmax(p)
	}
	out := predictOutput{Model: path, Dataset: name, Rows: test.Len(), ClassNames: meta.ClassNames}
	out.Accuracy, out.Recall, _ = pool.Scores(pred, test.Class, spec.Classes)
	if p := o.Probs; p != "" {
		if err := writeProbs(p, probs, pred); err != nil {
			return fmt.Errorf("--probs: %w", err)
		}
		out.Probs = p
	}
	if o.JSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s on %s test (%d rows): accuracy %.4f\n", path, name, out.Rows, out.Accuracy)
	for c, r := range out.Recall {
		label := strconv.Itoa(c)
		if c < len(meta.ClassNames) {
			label = meta.ClassNames[c]
		}
		fmt.Fprintf(cmd.OutOrStdout(), "  recall %-8s %.4f\n", label, r)
	}
	return nil
}

// writeProbs writes row, predicted class and one probability per class.
func writeProbs(path string, probs [][]float64, pred []int) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(fh)
	head := []string{"row", "predicted"}
	if len(probs) > 0 {
		for c := range probs[0] {
			head = append(head, "p"+strconv.Itoa(c))
		}
	}
	_ = w.Write(head)
	for i, p := range probs {
		rec := []string{strconv.Itoa(i), strconv.Itoa(pred[i])}
		for _, v := range p {
			rec = append(rec, strconv.FormatFloat(v, 'g', 6, 64))
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
