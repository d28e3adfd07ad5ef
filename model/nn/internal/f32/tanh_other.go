//go:build !amd64 || purego

package f32

// tanhSIMD is false: there is no assembly loop here.
const tanhSIMD = false

func tanhAVX2(dst, src *float32, n int) int { panic("f32: no tanhAVX2 on this build") }
