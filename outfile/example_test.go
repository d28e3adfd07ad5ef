package outfile_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dpal-dev/dpal/outfile"
)

// A run checks its paths before it starts, then replaces its output
// atomically: a crash leaves the old file or the new one.
func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "outfile-example")
	defer os.RemoveAll(dir)
	input, output := filepath.Join(dir, "events.csv"), filepath.Join(dir, "state")
	os.WriteFile(input, []byte("0.1,0.2\n"), 0o600)

	err := outfile.CheckDistinct([]outfile.Path{{Flag: "--save-state", Path: input}}, []outfile.Path{{Flag: "--input", Path: input}})
	fmt.Println(err != nil)
	if err := outfile.Probe(output); err != nil {
		fmt.Println(err)
		return
	}
	err = outfile.WriteFile(output, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, "new state\n")
		return err
	})
	b, _ := os.ReadFile(output)
	fmt.Print(err, " ", string(b))
	// Output:
	// true
	// <nil> new state
}
