//go:build !linux

package cputime

// Thread is not measured on this system (-1).
func Thread() int64 { return -1 }
