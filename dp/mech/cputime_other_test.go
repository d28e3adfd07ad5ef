//go:build !linux

package mech

// threadCPU is not measured here (-1).
func threadCPU() int64 { return -1 }
