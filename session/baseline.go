package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model"
)

// baselineError trains the non-private linear SVM on the whole training
// split (model.TrainLinearSVM, default options) and returns its test
// error, cached in the user cache directory under a key made of the
// dataset name, the options and a fingerprint of the data. A fit of more
// than 20 000 rows is announced on notice (if set) first.
func baselineError(name string, train, test *data.Dataset, notice io.Writer) (float64, error) {
	opt := model.SVMOptions{}
	key := baselineKey(name, opt, train, test)
	path := ""
	if dir, err := os.UserCacheDir(); err == nil {
		path = filepath.Join(dir, "dpal", "stream-baseline-"+key[:24]+".json")
		if b, err := os.ReadFile(path); err == nil {
			var c struct {
				Key   string  `json:"key"`
				Error float64 `json:"test_error"`
			}
			if json.Unmarshal(b, &c) == nil && c.Key == key {
				return c.Error, nil
			}
		}
	}
	if train.Len() > 20000 && notice != nil {
		fmt.Fprintf(notice, "dpal stream: training the non-private batch SVM on %d rows (cached afterwards)\n", train.Len())
	}
	w, err := model.TrainLinearSVM(train.X, train.Y, opt)
	if err != nil {
		return 0, err
	}
	e := model.ErrorRate(w, test.X, test.Y)
	if path != "" {
		b, _ := json.Marshal(map[string]any{"key": key, "dataset": name, "options": opt, "test_error": e})
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				slog.Warn("stream: cannot cache the baseline", "err", err)
			}
		}
	}
	return e, nil
}

// baselineKey hashes the dataset's name, the SVM options, both splits'
// sizes and every 97th row of each, enough to tell data versions apart.
func baselineKey(name string, opt model.SVMOptions, train, test *data.Dataset) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%+v|%s|%d|%s|%d|%d|", name, opt, train.Name, train.Len(), test.Name, test.Len(), train.Dim())
	HashRows(h, train)
	HashRows(h, test)
	return hex.EncodeToString(h.Sum(nil))
}
