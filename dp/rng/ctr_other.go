//go:build !amd64 || purego

package rng

// vaesOK is off: the bulk source runs crypto/aes.
var vaesOK = false

func expandKey256(*[32]byte, *[240]byte) { panic("rng: no VAES route") }

func ctrVAES(*[240]byte, uint64, []byte) { panic("rng: no VAES route") }
