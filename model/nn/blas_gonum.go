//go:build !openblas

package nn

// blas32Impl names the blas32 implementation in use: gonum's pure-Go one
// unless built with the openblas tag.
const blas32Impl = "gonum"
