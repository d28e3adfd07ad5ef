package groupsearch

import "github.com/dpal-dev/dpal/dp/mech"

// newMaxOracleScaled is newMaxOracle with the Laplace scale divided by
// noiseFactor: the halved-noise mutant (noiseFactor 2) that the privacy
// audit must catch. It lives in a test file so that production code has no
// way to weaken the noise.
func newMaxOracleScaled(b oracleBase, binarize bool, noiseFactor float64) (*maxOracle, error) {
	o, err := newMaxOracle(b, binarize)
	if err != nil {
		return nil, err
	}
	o.lap, err = mech.NewLaplace(b.p.Epsilon*noiseFactor, b.p.TLow)
	return o, err
}
