//go:build !purego

package rng

import "golang.org/x/sys/cpu"

// vaesOK turns on the VAES route of the bulk source (vaesCTR): AES-NI for
// the key schedule, VAES on 512-bit registers (AVX-512F; VL because the
// EVEX forms are defined under it) for the keystream.
var vaesOK = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VAES && cpu.X86.HasAES

// expandKey256 writes the AES-256 encryption key schedule of key to rk
// (AESKEYGENASSIST, constant time).
//
//go:noescape
func expandKey256(key *[32]byte, rk *[240]byte)

// ctrVAES writes the keystream blocks ctr, ctr+1, … (big-endian 128-bit
// counters, high half zero) under the round keys rk over dst, 32 blocks
// (512 bytes) at a time; len(dst) must be a multiple of 512.
//
//go:noescape
func ctrVAES(rk *[240]byte, ctr uint64, dst []byte)
