package cputime

import "syscall"

// Thread is the calling thread's CPU time in ns (RUSAGE_THREAD), or -1 when
// it cannot be read.
func Thread() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(1, &ru) != nil { // 1: RUSAGE_THREAD
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
