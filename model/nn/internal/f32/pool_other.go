//go:build !amd64 || purego

package f32

// poolSIMD is false: there are no assembly loops here.
const poolSIMD = false

func maxPairsAVX2(k, a *int32, src *float32, n, d, base int) {
	panic("f32: no maxPairsAVX2 on this build")
}

func maxKeyPairsAVX2(y *float32, arg, k, a *int32, n, d int) {
	panic("f32: no maxKeyPairsAVX2 on this build")
}

func addColSumsAVX2(acc, m *float32, rows, cols, n int) {
	panic("f32: no addColSumsAVX2 on this build")
}

func gatherAVX2(dst, src *float32, runs *Span, n int) {
	panic("f32: no gatherAVX2 on this build")
}
