package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadLabelledTabular(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		b.WriteString([]string{"0.1,0.2,1\n", "0.9,0.4,0\n"}[i%2])
	}
	file := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	train, test, image, err := LoadLabelled("csv", Source{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 40 || test.Len() != 10 || image != ([3]int{}) {
		t.Errorf("split %d/%d, image %v: want 40/10 and no image", train.Len(), test.Len(), image)
	}
	train, test, _, err = LoadLabelled("csv", Source{File: file, TestFile: file})
	if err != nil || train.Len() != 50 || test.Len() != 50 {
		t.Errorf("with a test file: %v", err)
	}
	_, _, _, err = LoadLabelled("libsvm", Source{})
	if nf, ok := errors.AsType[*NoFileError](err); !ok || nf.Dataset != "libsvm" {
		t.Errorf("libsvm without a file: %v, want a NoFileError", err)
	}
	if _, _, _, err := LoadLabelled("cifar10", Source{}); err == nil {
		t.Error("unknown dataset accepted")
	}
}
