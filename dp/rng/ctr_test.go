package rng

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// routeKeys are the keys on which the VAES route must equal crypto/aes's:
// the edges and a few random ones.
func routeKeys() map[string][32]byte {
	keys := map[string][32]byte{"zero": {}}
	var ff [32]byte
	for i := range ff {
		ff[i] = 0xff
	}
	keys["ones"] = ff
	r := Seeded(11)
	for _, name := range []string{"random1", "random2", "random3"} {
		var k [32]byte
		for i := range 4 {
			binary.LittleEndian.PutUint64(k[8*i:], r.Uint64())
		}
		keys[name] = k
	}
	return keys
}

// sameWords draws n words from each route under key, rekeying after quota
// words first (then every rekeyWords), and reports the first difference.
func sameWords(t *testing.T, key [32]byte, n, quota int) {
	t.Helper()
	std, fast := newAESSourceRoute(key, false), newAESSourceRoute(key, true)
	std.left, fast.left = quota, quota
	a, b := make([]uint64, 1000), make([]uint64, 1000)
	for done := 0; done < n; {
		m := min(len(a), n-done)
		std.fill(a[:m])
		fast.fill(b[:m])
		for i := range m {
			if a[i] != b[i] {
				t.Fatalf("word %d: crypto/aes %#x, VAES %#x", done+i, a[i], b[i])
			}
		}
		done += m
	}
}

// TestVAESIdentity is the acceptance test of the VAES route: every word
// equals crypto/aes's AES-256-CTR keystream, across refills and rekeys.
func TestVAESIdentity(t *testing.T) {
	if !vaesOK {
		t.Log("no VAES on this CPU (or purego): only crypto/aes runs")
		return
	}
	for name, key := range routeKeys() {
		t.Run(name, func(t *testing.T) {
			// Two full keys' quotas: the rekey at 2^20 words and the
			// next at 2^21, each key from the previous keystream.
			sameWords(t, key, 2*rekeyWords+3*aesBufWords+5, rekeyWords)
		})
	}
	t.Run("key schedule", func(t *testing.T) {
		// FIPS-197 appendix A.3: the last round key of the AES-256 key
		// 603deb10…0914dff4 is fe4890d1 e6188d0b 046df344 706c631e.
		key := [32]byte{0x60, 0x3d, 0xeb, 0x10, 0x15, 0xca, 0x71, 0xbe, 0x2b, 0x73, 0xae, 0xf0, 0x85, 0x7d, 0x77, 0x81,
			0x1f, 0x35, 0x2c, 0x07, 0x3b, 0x61, 0x08, 0xd7, 0x2d, 0x98, 0x10, 0xa3, 0x09, 0x14, 0xdf, 0xf4}
		want := []byte{0xfe, 0x48, 0x90, 0xd1, 0xe6, 0x18, 0x8d, 0x0b, 0x04, 0x6d, 0xf3, 0x44, 0x70, 0x6c, 0x63, 0x1e}
		var rk [240]byte
		expandKey256(&key, &rk)
		if !bytes.Equal(rk[224:], want) {
			t.Fatalf("w[56..59] = %x, want %x", rk[224:], want)
		}
	})
	t.Run("erases round keys on rekey", func(t *testing.T) {
		s := newAESSourceRoute(routeKeys()["random1"], true)
		old := s.ctr.(*vaesCTR)
		s.left = 0
		s.Uint64()
		if old.rk != ([240]byte{}) || s.ctr == keystream(old) {
			t.Fatal("the old round keys survive the rekey")
		}
	})
}

// FuzzVAESIdentity compares the routes on any key and length, with the
// first rekey after quota buffers so that short runs rekey too.
func FuzzVAESIdentity(f *testing.F) {
	f.Add(make([]byte, 32), uint16(1), uint8(0))
	f.Add(bytes.Repeat([]byte{0xff}, 32), uint16(5000), uint8(1))
	f.Add([]byte("dpal"), uint16(3*aesBufWords+1), uint8(2))
	f.Fuzz(func(t *testing.T, k []byte, n uint16, quota uint8) {
		if !vaesOK {
			return
		}
		var key [32]byte
		copy(key[:], k)
		sameWords(t, key, int(n), int(quota%4)*aesBufWords)
	})
}
