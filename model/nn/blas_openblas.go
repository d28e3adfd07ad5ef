//go:build openblas

package nn

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"

	"github.com/dpal-dev/dpal/model/nn/internal/f32"
)

// blas32Impl names the blas32 implementation in use.
const blas32Impl = "openblas"

// With the openblas build tag (and cgo, CGO_LDFLAGS=-lopenblas), the batch
// products run in the system's CBLAS instead of dpal's own kernels.
func init() {
	blas32.Use(netlib.Implementation{})
	f32.SetSIMD(false)
}
