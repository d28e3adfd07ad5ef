//go:build !linux

package dpsgd

// peakRSS is 0 off Linux (elsewhere ru_maxrss has other units).
func peakRSS() float64 { return 0 }
