// Package cputime owns the benchmark clock of dp's packages: the calling
// thread's CPU time, steadier than the wall clock on a shared machine.
// Benchmarks lock the goroutine to its thread while they read it.
package cputime
