package main

// The output paths of every command: checked against the inputs and
// probed before a run reads anything, and replaced only as checkReplace
// allows.

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/dpsgd"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/outfile"
	"github.com/dpal-dev/dpal/session"
)

// checkPaths refuses an output flag's file that is an input flag's file or
// another output's, and probes the outputs, before anything is read: a
// run fails at once, not after its work.
func checkPaths(cmd *cobra.Command, outputs, inputs []string) error {
	p := pathFlags(cmd, append(append([]string{}, outputs...), inputs...)...)
	outs, ins := make([]outfile.Path, len(outputs)), make([]outfile.Path, len(inputs))
	for i, n := range outputs {
		outs[i] = p[n]
	}
	for i, n := range inputs {
		ins[i] = p[n]
	}
	if err := outfile.CheckDistinct(outs, ins); err != nil {
		return err
	}
	return probeOutputs(cmd, outs)
}

// pathFlags reads the named string flags as outfile paths: each flag's
// value is its path (a flag cmd does not declare is none). It reads the
// flags by name, whatever the command binds them to, as every command
// calls it.
func pathFlags(cmd *cobra.Command, names ...string) map[string]outfile.Path {
	m := make(map[string]outfile.Path, len(names))
	for _, n := range names {
		p := outfile.Path{Flag: "--" + n}
		if fl := cmd.Flags().Lookup(n); fl != nil {
			p.Path = fl.Value.String()
		}
		m[n] = p
	}
	return m
}

// probeOutputs checks that each output of cmd can be written and may
// replace what is there (checkReplace); those written by
// outfile.WriteFile (--save-state, --posterior-out) need a directory
// that takes a temporary file.
func probeOutputs(cmd *cobra.Command, outs []outfile.Path) error {
	for _, o := range outs {
		if o.Flag == "--ledger" && ledger.IsURL(o.Path) {
			continue // a database, not a file
		}
		probe := outfile.Probe
		if o.Flag == "--save-state" || o.Flag == "--posterior-out" {
			probe = outfile.ProbeReplace
		}
		if err := probe(o.Path); err != nil {
			return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
		}
		if err := checkReplace(cmd, o); err != nil {
			return err
		}
	}
	return nil
}

// outputKinds are the formats (outfile.Sniff's names) that outputs write,
// by command and flag; the others write plain text, CSV or JSON lines.
var outputKinds = map[string]string{"train --out": nn.FileFormat, "train --checkpoint": dpsgd.CheckpointFormat,
	"stream --save-state": session.StateFormat}

// checkReplace is outfile.CheckReplace for cmd's output o, the one place
// the runs decide whether an output may replace an existing file: with
// --force one of its own kind or a plain one, never a ledger, a store or
// a dpal file of another kind. The --ledger file is opened, not replaced.
// Stream's documented replacements need no --force: --save-state over
// the state it resumes, and --out that a resumed run completes
// (openOutput checks it once the state says which output it wrote); nor
// do train --resume's: the checkpoint it continues and the model it
// completes (of their own kinds only).
func checkReplace(cmd *cobra.Command, o outfile.Path) error {
	if o.Flag == "--ledger" {
		return nil
	}
	force := forced(cmd)
	switch r := cmd.Flags().Lookup("resume"); {
	case r == nil:
	case r.Value.Type() == "bool": // train's: --resume continues --checkpoint and completes --out
		if r.Value.String() == "true" && (o.Flag == "--out" || o.Flag == "--checkpoint") {
			force = true
		}
	case r.Value.String() == "": // stream's --resume FILE, not given
	case o.Flag == "--out":
		return nil
	case o.Flag == "--save-state" && outfile.Same(o.Path, r.Value.String()):
		force = true
	}
	return outfile.CheckReplace(o, outputKinds[cmd.Name()+" "+o.Flag], force)
}

// forced reports whether cmd was given --force (a command without the
// flag never is).
func forced(cmd *cobra.Command) bool {
	fl := cmd.Flags().Lookup("force")
	return fl != nil && fl.Value.String() == "true"
}

// forceFlag declares --force for a command with outputs.
func forceFlag(f *pflag.FlagSet) {
	f.Bool("force", false, "replace existing output files (never a ledger, a store, or a state or model file of another kind)")
}
