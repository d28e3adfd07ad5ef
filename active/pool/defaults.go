package pool

// DefaultEpochs is the epochs per phase of the naive schedule when none
// is given: ten, the setting of docs/repro-pool.md, which learns on all
// three datasets (fewer steps, the dataset's dpal train epochs spread
// over T+1 phases, left KDD'99 at the majority class).
const DefaultEpochs = 10

// DefaultBatch is the expected batch size b when none is given: the
// dataset's tuned DP-SGD batch (presetBatch, dpsgd.Preset at ε ≥ 2), at
// most 2/5 of the initial set (App. B's 4096 of 10 000), at least 1.
func DefaultBatch(presetBatch, initial int) int {
	return max(1, min(presetBatch, 2*initial/5))
}
