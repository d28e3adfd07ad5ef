// Package rng owns dpal's sources of randomness.
//
// Every mechanism takes a *Rand. Production code uses Secure, which reads
// crypto/rand; Seeded exists only for tests and experiments, must be chosen
// explicitly (the CLI's --seed), and reports its seed so that every output
// it affects can record it.
package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
)

// Rand is a random source plus the facts an output must record about it.
// The embedded *rand.Rand supplies IntN, Float64, Perm, Shuffle and friends;
// released noise must still come from the exact samplers in dp/mech, never
// from Float64-based transforms.
type Rand struct {
	*rand.Rand
	seed   uint64
	seeded bool
}

// Secure returns a Rand backed by the operating system's CSPRNG.
func Secure() *Rand {
	return &Rand{Rand: rand.New(&cryptoSource{})}
}

// Seeded returns a reproducible Rand (ChaCha8 keyed by seed). For tests and
// experiments only: its stream is predictable to anyone who knows the seed.
func Seeded(seed uint64) *Rand {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return &Rand{Rand: rand.New(rand.NewChaCha8(key)), seed: seed, seeded: true}
}

// Source is the interface every randomness source implements: 64 uniformly
// random bits per call. It is math/rand/v2's Source, so any of its
// generators, or a hardware or remote source, can be adapted.
type Source = rand.Source

// FromSource wraps a caller's source, such as a hardware RNG. The caller
// vouches that src is cryptographically secure: dpal treats it like Secure
// (it is not reported as seeded, and Split derives children from Secure).
func FromSource(src Source) *Rand {
	return &Rand{Rand: rand.New(src)}
}

// New returns Seeded(*seed) when seed is non-nil and Secure otherwise, the
// usual shape of a CLI's optional --seed flag.
func New(seed *uint64) *Rand {
	if seed != nil {
		return Seeded(*seed)
	}
	return Secure()
}

// Seed reports the seed and true for a seeded source, or 0 and false for the
// secure one.
func (r *Rand) Seed() (uint64, bool) { return r.seed, r.seeded }

// Split derives an independent child source, for example one per worker or
// per repetition. A seeded parent gives a seeded child whose seed is drawn
// from the parent, so the whole tree stays reproducible from one seed.
func (r *Rand) Split() *Rand {
	if !r.seeded {
		return Secure()
	}
	return Seeded(r.Uint64())
}

// cryptoSource adapts crypto/rand to math/rand/v2's Source, buffering reads
// because a syscall per Uint64 would dominate the samplers' cost.
type cryptoSource struct {
	buf [512]byte
	off int
}

func (c *cryptoSource) Uint64() uint64 {
	if c.off == 0 || c.off+8 > len(c.buf) {
		// crypto/rand.Read never returns an error on supported platforms
		// (Go ≥ 1.24 crashes the program instead), so there is nothing to handle.
		_, _ = crand.Read(c.buf[:])
		c.off = 0
	}
	v := binary.LittleEndian.Uint64(c.buf[c.off:])
	c.off += 8
	return v
}
