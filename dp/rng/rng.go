// Package rng owns dpal's sources of randomness.
//
// Every mechanism takes a *Rand. Production code uses Secure, a ChaCha8
// CSPRNG keyed and periodically rekeyed from crypto/rand; Seeded exists only for tests and experiments, must be chosen
// explicitly (the CLI's --seed), and reports its seed so that every output
// it affects can record it. Bulk derives from either a faster child stream
// (AES-256-CTR, secure or seeded like its parent) for samplers that spend
// millions of words per call; Fill hands out words a block at a time. Its
// keystream runs in VAES assembly on AVX-512 CPUs and through crypto/aes
// elsewhere, the same words on either route (see Bulk).
package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
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
	// The concrete source behind Rand, when it is one of ours, so that
	// Uint64 (the samplers' hot call) skips the interface dispatch.
	chacha *rand.ChaCha8
	secure *secureSource
	aes    *aesSource
}

// Secure returns a Rand backed by a CSPRNG: ChaCha8 (which the Go standard
// library documents as cryptographically strong, with fast key erasure)
// keyed from the operating system's crypto/rand, and rekeyed from it every
// rekeyWords outputs. Reading crypto/rand for every word costs about three
// times as much and would dominate the vector mechanisms.
func Secure() *Rand {
	s := &secureSource{}
	return &Rand{Rand: rand.New(s), secure: s}
}

// Uint64 returns 64 uniformly random bits from the same stream the embedded
// *rand.Rand reads, calling a known source directly.
func (r *Rand) Uint64() uint64 {
	switch {
	case r.chacha != nil:
		return r.chacha.Uint64()
	case r.secure != nil:
		return r.secure.Uint64()
	case r.aes != nil:
		return r.aes.Uint64()
	}
	return r.Rand.Uint64()
}

// Seeded returns a reproducible Rand (ChaCha8 keyed by seed). For tests and
// experiments only: its stream is predictable to anyone who knows the seed.
func Seeded(seed uint64) *Rand {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	c := rand.NewChaCha8(key)
	return &Rand{Rand: rand.New(c), seed: seed, seeded: true, chacha: c}
}

// Source is the interface every randomness source implements: 64 uniformly
// random bits per call. It is math/rand/v2's Source, so any of its
// generators, or a hardware or remote source, can be adapted.
type Source = rand.Source

// FromSource wraps a caller's source, such as a hardware RNG. The caller
// vouches that src is cryptographically secure: dpal treats it like Secure
// (it is not reported as seeded, and Split derives children from Secure).
func FromSource(src Source) *Rand {
	r := &Rand{Rand: rand.New(src)}
	if c, ok := src.(*rand.ChaCha8); ok {
		r.chacha = c // same stream, called directly
	}
	return r
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

// stateMagic heads a seeded source's saved position.
const stateMagic = "dpal-seeded:"

// MarshalBinary returns a seeded source's position in its stream (its
// seed and math/rand/v2's ChaCha8 state), for the checkpoint of a
// reproducible run: UnmarshalBinary puts a seeded source at that position,
// after which it draws what the saved one would have. Only Seeded sources
// and their Split children have one. A secure source refuses: its stream
// must be neither reproducible nor written down, so a resumed secure run
// draws fresh randomness. A Bulk child refuses too: it erases its keys as
// it goes; a reproducible run repositions it by drawing again from its
// parent's position.
func (r *Rand) MarshalBinary() ([]byte, error) {
	if !r.seeded || r.chacha == nil {
		return nil, errors.New("rng: only a seeded, non-bulk source can save its position")
	}
	st, err := r.chacha.MarshalBinary()
	if err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint64([]byte(stateMagic), r.seed)
	return append(out, st...), nil
}

// UnmarshalBinary puts r, a seeded non-bulk source, at the position
// MarshalBinary saved (the seed it reports included).
func (r *Rand) UnmarshalBinary(b []byte) error {
	if !r.seeded || r.chacha == nil {
		return errors.New("rng: only a seeded, non-bulk source can be repositioned")
	}
	if len(b) < len(stateMagic)+8 || string(b[:len(stateMagic)]) != stateMagic {
		return errors.New("rng: not a seeded source's saved position")
	}
	seed := binary.LittleEndian.Uint64(b[len(stateMagic):])
	if err := r.chacha.UnmarshalBinary(b[len(stateMagic)+8:]); err != nil {
		return err
	}
	r.seed = seed
	return nil
}

// Split derives an independent child source, for example one per worker or
// per repetition. A seeded parent gives a seeded child whose seed is drawn
// from the parent, so the whole tree stays reproducible from one seed.
func (r *Rand) Split() *Rand {
	if !r.seeded {
		return Secure()
	}
	return Seeded(r.Uint64())
}

// rekeyWords is how many outputs a Secure source draws between fresh keys
// from crypto/rand (8 MiB of output).
const rekeyWords = 1 << 20

// secureSource is ChaCha8 keyed, and periodically rekeyed, from crypto/rand.
type secureSource struct {
	c    *rand.ChaCha8
	left int
}

func (s *secureSource) Uint64() uint64 {
	if s.left == 0 {
		s.rekey()
	}
	s.left--
	return s.c.Uint64()
}

func (s *secureSource) rekey() {
	var key [32]byte
	// crypto/rand.Read never returns an error on supported platforms
	// (Go ≥ 1.24 crashes the program instead), so there is nothing to handle.
	_, _ = crand.Read(key[:])
	if s.c == nil {
		s.c = rand.NewChaCha8(key)
	} else {
		s.c.Seed(key)
	}
	clear(key[:])
	s.left = rekeyWords
}
