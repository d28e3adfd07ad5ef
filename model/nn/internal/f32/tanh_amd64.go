//go:build !purego

package f32

import "golang.org/x/sys/cpu"

// tanhSIMD turns on Tanh's assembly loop.
var tanhSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// tanhAVX2 runs Tanh's steps over src's groups of four (n a multiple of
// 4) and returns the index of the first group with a lane that needs
// math.Tanh (its lanes are left unspecified), or n.
//
//go:noescape
func tanhAVX2(dst, src *float32, n int) int
