// Command dpal-beam runs the release stage of `dpal kanon run` (holdout,
// Bernoulli(β) sample, then the exact k threshold behind a Count-Mean-Min
// pre-filter, or with --threshold dp the noisy threshold on every sampled
// query; package kanon, Feyisetan et al. 2019) as an Apache Beam pipeline
// (beam/kanonbeam) on any Beam runner. For the same log, flags and --seed
// it publishes the file `dpal kanon run --released-out` writes, and it
// charges the ledger what that command charges (kanon.Config.Charge). It is a separate binary in a
// separate module so that the core dpal binary stays free of Beam.
//
// It is an ordinary Beam Go program: its flags and Beam's (--runner,
// --endpoint, --environment_type, the SDK harness's
// --worker, --id, …) are all registered on Go's flag package and parsed
// before beam.Init, so a runner that starts the binary as an SDK worker
// (Dataflow, Flink, Spark, prism with LOOPBACK or PROCESS) finds its
// flags, and --runner picks any registered runner (beamx: prism by
// default). The log is read by textio.Read on any linked Beam filesystem
// (local, gs://), sharded across workers; the released set goes to
// --output on one, after the driver has charged the ledger file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	// s3:// for --log and --output (local and gs:// come with beamx).
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

func main() {
	o := defaultOptions()
	o.register(flag.CommandLine)
	flag.Parse()
	beam.Init() // in worker mode this runs the SDK harness and exits
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	res, err := run(context.Background(), o, given, beamx.Run)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dpal-beam: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(res)
}
