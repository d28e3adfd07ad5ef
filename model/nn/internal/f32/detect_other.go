//go:build !amd64 || purego

package f32

// detect finds no SIMD route on this architecture or under purego.
func detect() (gemmFunc, convertFunc, copyFunc, sqNormFunc, string) {
	return nil, nil, nil, nil, ""
}
