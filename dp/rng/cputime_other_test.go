//go:build !linux

package rng

// threadCPU is not measured here (-1).
func threadCPU() int64 { return -1 }
