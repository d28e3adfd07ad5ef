package rng

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"math/bits"
	"testing"
)

func TestBulk(t *testing.T) {
	t.Run("reproducible and seeded", func(t *testing.T) {
		a, b := Seeded(5).Bulk(), Seeded(5).Bulk()
		for i := range 2000 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("word %d: %d != %d", i, x, y)
			}
		}
		if s, ok := a.Seed(); !ok || s != 5 {
			t.Fatalf("Seed() = %d, %v; want 5, true", s, ok)
		}
		if _, ok := Secure().Bulk().Seed(); ok {
			t.Fatal("bulk child of a secure source claims to be seeded")
		}
	})
	t.Run("is AES-256-CTR keyed from the parent", func(t *testing.T) {
		parent := Seeded(9)
		var key [32]byte
		for i := range 4 {
			binary.LittleEndian.PutUint64(key[8*i:], parent.Uint64())
		}
		block, _ := aes.NewCipher(key[:])
		want := make([]byte, 8*100)
		cipher.NewCTR(block, make([]byte, aes.BlockSize)).XORKeyStream(want, want)
		r := Seeded(9).Bulk()
		for i := range 100 {
			if got := r.Uint64(); got != binary.LittleEndian.Uint64(want[8*i:]) {
				t.Fatalf("word %d differs from the AES-256-CTR keystream", i)
			}
		}
	})
	t.Run("Fill equals Uint64", func(t *testing.T) {
		for _, c := range []struct {
			name string
			a, b *Rand
		}{{"bulk", Seeded(3).Bulk(), Seeded(3).Bulk()}, {"chacha", Seeded(3), Seeded(3)}} {
			dst := make([]uint64, 3*aesBufWords+17)
			c.a.Uint64() // start mid-buffer
			c.b.Uint64()
			c.a.Fill(dst)
			for i, w := range dst {
				if x := c.b.Uint64(); x != w {
					t.Fatalf("%s: word %d: Fill %d, Uint64 %d", c.name, i, w, x)
				}
			}
		}
	})
	t.Run("Fill equals Uint64 across rekeys", func(t *testing.T) {
		// Fill's direct writes (whole chunks into dst) mixed with buffered
		// words and single Uint64 calls, on both keystream routes, with
		// quotas that end inside a buffer and a direct write.
		for _, vaes := range []bool{false, vaesOK} {
			for _, quota := range []int{64, 640, 3 * aesBufWords} {
				var key [32]byte
				key[0] = byte(quota)
				a, b := newAESSourceRoute(key, vaes), newAESSourceRoute(key, vaes)
				a.left, b.left = quota, quota
				n := 0
				for _, m := range []int{256, 1, 64, 511, 256, 1000, 3, 4096, 130, 2048} {
					dst := make([]uint64, m)
					a.fill(dst)
					for i, w := range dst {
						if x := b.Uint64(); x != w {
							t.Fatalf("vaes %v, quota %d: word %d: Fill %#x, Uint64 %#x", vaes, quota, n+i, w, x)
						}
					}
					n += m
					// A word between fills leaves buf part-read.
					if x, y := a.Uint64(), b.Uint64(); x != y {
						t.Fatalf("vaes %v, quota %d: word %d: %#x, %#x", vaes, quota, n, x, y)
					}
					n++
				}
			}
		}
	})
	t.Run("rekeys", func(t *testing.T) {
		r := Seeded(4).Bulk()
		r.aes.left = aesBufWords // one buffer before the rekey
		r.Uint64()
		old := r.aes.ctr
		for range aesBufWords {
			r.Uint64()
		}
		if r.aes.ctr == old || r.aes.left != rekeyWords-aesBufWords {
			t.Fatal("bulk source did not rekey")
		}
	})
	t.Run("bits balanced", func(t *testing.T) {
		r := Seeded(6).Bulk()
		const n = 1 << 14
		ones := 0
		for range n {
			ones += bits.OnesCount64(r.Uint64())
		}
		// 64n fair bits: mean 32n, sd 4√n = 512; allow 6 sd.
		if d := ones - 32*n; d < -3072 || d > 3072 {
			t.Fatalf("%d ones in %d bits", ones, 64*n)
		}
	})
}
