//go:build openblas

package nn

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"
)

// With the openblas build tag (and cgo, CGO_LDFLAGS=-lopenblas), the batch
// products run in the system's CBLAS instead of gonum's pure-Go kernels.
func init() { blas32.Use(netlib.Implementation{}) }
