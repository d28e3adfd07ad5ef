package streamrepro

import "github.com/dpal-dev/dpal/dp/mech"

// Summary is the JSON record of a Run: settings, seeds, the baseline, the
// cross-validation, per-method headline numbers and every run.
type Summary struct {
	Paper     string           `json:"paper"`
	Seed      uint64           `json:"seed"`
	PermSeeds []uint64         `json:"perm_seeds"`
	Settings  Settings         `json:"settings"`
	Datasets  []DatasetSummary `json:"datasets"`
	Seconds   float64          `json:"seconds"`
}

// Settings are the fixed parameters of §5 as used.
type Settings struct {
	EpsSelect          float64 `json:"eps_select"`
	EpsGrad            float64 `json:"eps_grad"`
	BernoulliP         float64 `json:"bernoulli_p_outside_slab"`
	B                  float64 `json:"b"`
	Tau                float64 `json:"tau"`
	Window             int     `json:"window"`
	BatchSizes         []int   `json:"batch_sizes"`
	M                  float64 `json:"m"`
	Radius             float64 `json:"radius"`
	Loss               string  `json:"loss"`
	StepSize           string  `json:"step_size"`
	ExpCalibration     string  `json:"exponential_calibration"`
	Centred            bool    `json:"centred"`
	Perms              int     `json:"perms"`
	Figures            []int   `json:"figures"`
	ErrorMeasuredOn    string  `json:"error_measured_on"`
	Interpolation      string  `json:"interpolation"`
	Spread             string  `json:"spread"`
	TestRowsCap        int     `json:"test_rows_cap"`
	ValidationRowsCap  int     `json:"validation_rows_cap"`
	CVHeldOutFraction  float64 `json:"cv_held_out_fraction"`
	LearnerSeedDerived string  `json:"learner_seed_derivation"`
}

// Horizons are a dataset's plot ranges.
type Horizons struct {
	Updates    int `json:"fig2_updates"`
	Labels     int `json:"fig3_fig5b_labels"`
	Fig4Labels int `json:"fig4_labels"`
	Fig5Obs    int `json:"fig5a_observations"`
}

// DatasetSummary is one dataset's results.
type DatasetSummary struct {
	Name              string   `json:"name"`
	Dim               int      `json:"dim"`
	TrainRows         int      `json:"train_rows"`
	TestRows          int      `json:"test_rows"`
	TestEvalRows      int      `json:"test_eval_rows"`
	TestSubsampleSeed uint64   `json:"test_subsample_seed"`
	Horizons          Horizons `json:"horizons"`
	BatchSVM          BatchSVM `json:"batch_svm"`
	// ConstantError is the error of w = 0, which predicts +1 everywhere
	// (model.Sign breaks the tie upwards): the trivial reference.
	ConstantError float64         `json:"constant_plus1_error"`
	CV            CV              `json:"cross_validation"`
	Methods       []MethodSummary `json:"methods"`
	Figures       []string        `json:"figures"`
	Runs          []RunRecord     `json:"runs"`
	Seconds       float64         `json:"seconds"`
}

// BatchSVM is the non-private batch baseline (model.TrainLinearSVM on the
// whole training split).
type BatchSVM struct {
	LambdaGrid    []float64 `json:"lambda_grid"`
	ValErrors     []float64 `json:"val_errors,omitempty"`
	Lambda        float64   `json:"lambda"`
	TrainSeconds  float64   `json:"train_seconds"`
	TrainError    float64   `json:"train_error"`
	TestError     float64   `json:"test_error"`
	TestErrorEval float64   `json:"test_error_eval_rows"`
}

// CV records the cross-validation of η and λ.
type CV struct {
	EtaGrid    []float64        `json:"eta_grid"`
	LambdaGrid []float64        `json:"lambda_grid"`
	Reps       int              `json:"reps"`
	FitRows    int              `json:"fit_rows"`
	ValRows    int              `json:"val_rows"`
	Seed       uint64           `json:"seed"`
	Criterion  string           `json:"criterion"`
	Scores     []CVScore        `json:"scores"`
	Chosen     map[string]hyper `json:"chosen"`
}

// CVScore is one grid point's validation score.
type CVScore struct {
	Method   string  `json:"method"`
	Eta      float64 `json:"eta"`
	Lambda   float64 `json:"lambda"`
	ValError float64 `json:"val_error"`
}

// Stat is a mean and sample standard deviation over permutations.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// MethodSummary is one method's headline numbers over permutations.
type MethodSummary struct {
	Method            string `json:"method"`
	Runs              int    `json:"runs"`
	ErrorAtFig4Labels Stat   `json:"error_at_fig4_labels"`
	ErrorAtLabels     Stat   `json:"error_at_label_range"`
	ErrorAtUpdates    *Stat  `json:"error_at_update_range,omitempty"`
	Labels            Stat   `json:"labels"`
	Observed          Stat   `json:"observed"`
	Updates           Stat   `json:"updates"`
	// EpsilonPerRecord is the largest per-record ε any run's ledger
	// reports (null for the non-private baseline).
	EpsilonPerRecord *float64 `json:"epsilon_per_record"`
}

// RunRecord is one run's seeds and end state.
type RunRecord struct {
	Method            string   `json:"method"`
	Perm              int      `json:"perm"`
	StreamSeed        uint64   `json:"stream_seed"`
	LearnerSeed       uint64   `json:"learner_seed"`
	Eta               float64  `json:"eta"`
	Lambda            float64  `json:"lambda"`
	Updates           int      `json:"updates"`
	Labels            int      `json:"labels"`
	Observed          int      `json:"observed"`
	EpsilonPerRecord  *float64 `json:"epsilon_per_record"`
	ErrorAtFig4Labels float64  `json:"error_at_fig4_labels"`
	ErrorAtLabels     float64  `json:"error_at_label_range"`
	ErrorAtUpdates    *float64 `json:"error_at_update_range,omitempty"`
}

func settingsOf(o *Options) Settings {
	return Settings{
		EpsSelect: o.EpsSelect, EpsGrad: o.EpsGrad, B: o.B, Tau: o.Tau,
		BernoulliP: mech.RRFlipProb(o.EpsSelect),
		Window:     o.Window, BatchSizes: o.BatchSizes, M: 1, Radius: o.Radius, Loss: "hinge",
		StepSize:           "eta_t = eta / t, t = update counter",
		ExpCalibration:     "paper (eq. 7 as written; the ledger charges the true eps_s)",
		Perms:              o.Perms,
		Figures:            o.Figures,
		ErrorMeasuredOn:    "fixed random subsample of the test split (test_eval_rows, test_subsample_seed); batch SVM also on the whole test split",
		Interpolation:      "per run, piece-wise linear in (labels at release, error) between consecutive releases (paper §5); the last model holds past a run's end",
		Spread:             "bands are mean +- 1 sample standard deviation over permutations",
		TestRowsCap:        o.TestRows,
		ValidationRowsCap:  o.ValRows,
		CVHeldOutFraction:  o.CVFrac,
		LearnerSeedDerived: "perm seeds are drawn from rng.Seeded(seed); the stream order of a permutation is data.Permutation(n, perm seed), shared by all methods; learner seed = splitmix(perm seed, 100 + method index); a dataset's test subsample, CV split and CV streams come from splitmix(seed, FNV-1a(dataset name))",
	}
}
