package pool

import (
	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/dp/rng"
)

// Trainer is what the pool loop needs of a DP-SGD model (the DP-SGD
// trainer implements it; this package does not). The loop drives it phase
// by phase from a Plan:
//
//	for each phase entry e of round i:
//	    charge Plan.PhaseLoss(e, g) to every record of every sampled group g
//	    Train(r, labelled, rates, phase.Steps, phase.NoiseMultiplier)
//	after the last entry of round i ≤ T:
//	    Predict(r, pool, passes) → Select (charges ε_Sel/T to the scored records)
//
// so the ledger holds, per record, exactly the plan's loss before a model
// trained on it (or a selection scored from it) is released.
type Trainer interface {
	// Train runs steps DP-SGD steps with noise multiplier sigma on the
	// labelled records. Each step draws a Poisson batch that includes
	// record i independently with probability rates[i] (the plan's rate of
	// its group; 0 leaves it out), clips each example's gradient to the
	// trainer's norm bound C, adds Gaussian noise of standard deviation
	// sigma·C to the sum and divides by the expected batch Σ rates. The
	// plan's accounting is valid only for exactly this sampling and noise.
	// Randomness (batches, noise) comes from r.
	Train(r *rng.Rand, labelled *data.Dataset, rates []float64, steps int, sigma float64) error
	// Predict returns each row's class probabilities from passes forward
	// passes, indexed [row][pass][class]: passes = 1 is the plain model,
	// passes > 1 keeps dropout active (MC dropout, for BALD). Its output
	// is post-processing of the released model and of the rows.
	Predict(r *rng.Rand, rows [][]float64, passes int) ([][][]float64, error)
	// Classes is the number of classes C.
	Classes() int
}
