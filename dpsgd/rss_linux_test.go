//go:build linux

package dpsgd

import "syscall"

// peakRSS is the test process's peak resident set size in MB so far
// (getrusage's ru_maxrss, in KiB on Linux), which
// includes MNIST held in memory and whatever ran before.
func peakRSS() float64 {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return float64(u.Maxrss) / 1024
}
