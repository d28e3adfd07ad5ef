package rng

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// Bulk returns a child Rand for samplers that spend millions of words per
// call (the vector mechanisms' noise, DP-SGD's Poisson sampling): AES-256 in
// counter mode, keyed with 256 bits drawn from r, whose keystream it returns
// as little-endian words. Counter-mode AES under a secret key is the NIST
// SP 800-90A CTR_DRBG construction; like Secure, the stream erases its key
// every rekeyWords words, replacing it by the next 32 bytes of its own
// keystream, so a later compromise of the state reveals no earlier output.
//
// The keystream has two routes, which give the same words:
//
//   - VAES (amd64 with AVX-512F, AVX-512VL, VAES and AES-NI; not under the
//     purego build tag): expandKey256 builds the round keys with
//     AESKEYGENASSIST and ctrVAES encrypts 32 counter blocks per iteration,
//     four to a 512-bit register, with VAESENC/VAESENCLAST (ctr_amd64.s).
//     It is constant-time like AES-NI: the S-box is in the instruction, no
//     table is indexed by the key or the data, and the only branch is the
//     loop count. The old stream's round keys are cleared at each rekey.
//   - crypto/aes with cipher.NewCTR from the zero IV, everywhere else
//     (AES-NI CTR on other amd64 and arm64).
//
// TestVAESIdentity proves the routes equal, word for word, on edge and
// random keys through two rekeys, and FuzzVAESIdentity on any key, length
// and rekey point. Per word of keystream (BenchmarkBulkRoutes, CPU time on
// the 2-core AMD EPYC development machine under load), VAES costs
// 0.65–0.70 ns against crypto/aes's 1.6–1.8 ns, and either is far below
// ChaCha8's 9–12 ns (BenchmarkUint64/seeded).
//
// A child of a seeded Rand is reproducible from the parent's seed and
// reports it; a child of a secure Rand is secure. The child consumes four
// words of r, so the parent's stream stays reproducible too.
//
// When r is already a bulk source, Bulk returns r itself.
func (r *Rand) Bulk() *Rand {
	if r.aes != nil {
		return r
	}
	var key [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(key[8*i:], r.Uint64())
	}
	s := newAESSource(key)
	clear(key[:])
	return &Rand{Rand: rand.New(s), seed: r.seed, seeded: r.seeded, aes: s}
}

// Fill sets dst to uniformly random words: the same words, in order, as
// len(dst) calls of Uint64, faster for a bulk source.
func (r *Rand) Fill(dst []uint64) {
	if r.aes != nil {
		r.aes.fill(dst)
		return
	}
	for i := range dst {
		dst[i] = r.Uint64()
	}
}

// aesBufWords is the keystream buffered per AES call: large enough to
// amortise the call, small enough for L1.
const aesBufWords = 512

// littleEndian says whether the machine stores words little-endian, so
// that the keystream's bytes, read in place, are already its
// little-endian words.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// aesSource is AES-256-CTR's keystream, a buffer at a time.
type aesSource struct {
	ctr  keystream
	vaes bool                // ctr is vaesCTR rather than crypto/aes
	buf  [aesBufWords]uint64 // keystream as little-endian words
	i    int                 // next unread word of buf
	left int                 // words until the next rekey
}

func newAESSource(key [32]byte) *aesSource {
	return newAESSourceRoute(key, vaesOK)
}

// newAESSourceRoute is newAESSource on the VAES route or crypto/aes's.
func newAESSourceRoute(key [32]byte, vaes bool) *aesSource {
	s := &aesSource{vaes: vaes}
	s.rekey(&key)
	clear(key[:])
	return s
}

// rekey starts a fresh counter-mode stream under key, erasing the old
// stream's round keys where they are ours to erase.
func (s *aesSource) rekey(key *[32]byte) {
	if s.ctr != nil {
		s.ctr.erase()
	}
	if s.vaes {
		s.ctr = newVAESCTR(key)
	} else {
		s.ctr = newStdCTR(key)
	}
	s.left = rekeyWords
	s.i = aesBufWords
}

func (s *aesSource) Uint64() uint64 {
	if s.i == aesBufWords {
		s.refill()
	}
	w := s.buf[s.i]
	s.i++
	return w
}

// refill encrypts the next counter blocks into buf, rekeying first when the
// key's quota is spent. Out of line so that Uint64 inlines.
//
//go:noinline
func (s *aesSource) refill() { s.refillN(aesBufWords) }

// refillN puts the next n words of the stream (n a multiple of
// ctrChunk/8, at most aesBufWords) at the end of buf, or fewer when the
// key's quota ends sooner, so that the stream rekeys after exactly
// rekeyWords words however it is read.
func (s *aesSource) refillN(n int) {
	s.rekeyIfSpent()
	n = min(n, s.left)
	s.keystream(s.buf[aesBufWords-n:])
	s.i = aesBufWords - n
}

// rekeyIfSpent rekeys when the key's quota is spent, from the next 32 bytes
// of the keystream; the rest of the chunk is never used, as the old stream
// ends here.
func (s *aesSource) rekeyIfSpent() {
	if s.left > 0 {
		return
	}
	var chunk [ctrChunk]byte
	s.ctr.next(chunk[:])
	s.rekey((*[32]byte)(chunk[:32]))
	clear(chunk[:])
}

// keystream writes the next len(w) words of the stream over w (len(w) a
// multiple of ctrChunk/8, at most s.left) and charges them to the quota.
// The keystream is written over w's own bytes (unsafe only in this view),
// then, on a big-endian machine, byte-swapped so that the words are the
// same everywhere.
func (s *aesSource) keystream(w []uint64) {
	s.ctr.next(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)))
	if !littleEndian {
		for i, x := range w {
			w[i] = bits.ReverseBytes64(x)
		}
	}
	s.left -= len(w)
}

// fill copies the buffered words, then writes whole chunks of keystream
// straight into dst (the same words: buf would only have held them on the
// way), and takes a last part shorter than a chunk from one fresh chunk in
// buf, whose rest stays buffered.
func (s *aesSource) fill(dst []uint64) {
	n := copy(dst, s.buf[s.i:])
	s.i += n
	dst = dst[n:]
	for len(dst) > 0 { // buf is empty
		s.rekeyIfSpent()
		if m := min(len(dst)&^(ctrChunk/8-1), s.left); m > 0 {
			s.keystream(dst[:m])
			dst = dst[m:]
			continue
		}
		s.refillN(ctrChunk / 8)
		n := copy(dst, s.buf[s.i:])
		s.i += n
		dst = dst[n:]
	}
}

// ctrChunk is the granule of keystream.next, in bytes: the 32 blocks of
// one iteration of ctrVAES.
const ctrChunk = 512

// keystream is AES-256-CTR's keystream under one key, from the zero
// counter block on.
type keystream interface {
	// next writes the following len(b) keystream bytes over b; len(b) is
	// a multiple of ctrChunk.
	next(b []byte)
	// erase clears the key material it holds.
	erase()
}

// stdCTR is the keystream from crypto/aes and cipher.NewCTR.
type stdCTR struct{ s cipher.Stream }

func newStdCTR(key *[32]byte) *stdCTR {
	// A 32-byte key is always valid for aes.NewCipher.
	block, _ := aes.NewCipher(key[:])
	return &stdCTR{cipher.NewCTR(block, make([]byte, aes.BlockSize))}
}

func (c *stdCTR) next(b []byte) {
	clear(b)
	c.s.XORKeyStream(b, b)
}

// erase drops the stream; crypto/aes keeps its round keys out of reach.
func (c *stdCTR) erase() { c.s = nil }

// vaesCTR is the same keystream from ctrVAES (assembly, 32 blocks per
// iteration with VAES on 512-bit registers) and a key schedule by
// expandKey256 (AESKEYGENASSIST).
type vaesCTR struct {
	rk [240]byte // the 15 round keys
	// n is the next block's counter. cipher.NewCTR's counter is the
	// 128-bit big-endian block from the zero IV; its high half stays zero
	// because a key encrypts at most rekeyWords/2 + ctrChunk/16 blocks
	// (2^19 + 32) before the stream is rekeyed, so n never nears 2^64.
	n uint64
}

func newVAESCTR(key *[32]byte) *vaesCTR {
	c := &vaesCTR{}
	expandKey256(key, &c.rk)
	return c
}

func (c *vaesCTR) next(b []byte) {
	ctrVAES(&c.rk, c.n, b)
	c.n += uint64(len(b) / 16)
}

func (c *vaesCTR) erase() { clear(c.rk[:]) }
