package rng

import "testing"

func TestSeededIsReproducible(t *testing.T) {
	a, b := Seeded(42), Seeded(42)
	for i := 0; i < 100; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatalf("draw %d differs between two sources seeded with 42", i)
		}
	}
	if s, ok := a.Seed(); !ok || s != 42 {
		t.Fatalf("Seed() = %d, %v; want 42, true", s, ok)
	}
}

func TestSecureIsNotSeeded(t *testing.T) {
	r := Secure()
	if _, ok := r.Seed(); ok {
		t.Fatal("secure source claims to be seeded")
	}
	a, b, c := r.Uint64(), r.Uint64(), r.Uint64()
	if a == b && b == c {
		t.Fatal("secure source repeats itself")
	}
	if _, ok := r.Split().Seed(); ok {
		t.Fatal("child of a secure source is seeded")
	}
}

func TestSplitIsReproducible(t *testing.T) {
	a, b := Seeded(7).Split(), Seeded(7).Split()
	if a.Uint64() != b.Uint64() {
		t.Fatal("children of equal seeds differ")
	}
}

func TestFromSourceUsesTheSource(t *testing.T) {
	r := FromSource(constSource(7))
	if r.Uint64() != 7 {
		t.Fatal("FromSource ignored its source")
	}
	if _, ok := r.Seed(); ok {
		t.Fatal("a caller's source is reported as seeded")
	}
}

type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

// The direct Uint64 reads the same stream as the embedded *rand.Rand, so
// mixing Uint64 with IntN and friends stays reproducible.
func TestUint64MatchesEmbeddedStream(t *testing.T) {
	a, b := Seeded(3), Seeded(3)
	for i := range 100 {
		x, y := a.Uint64(), b.Rand.Uint64()
		if x != y {
			t.Fatalf("draw %d: %d != %d", i, x, y)
		}
	}
}

func TestSecureRekeys(t *testing.T) {
	s := &secureSource{}
	s.Uint64()
	if s.left != rekeyWords-1 {
		t.Fatalf("after the first draw left = %d", s.left)
	}
	before := *s.c
	s.left = 0
	s.Uint64()
	if s.left != rekeyWords-1 || *s.c == before {
		t.Fatal("source did not rekey")
	}
}

// A saved position resumes the stream exactly, through the embedded
// *rand.Rand as well; secure and bulk sources have none to save.
func TestSeededPosition(t *testing.T) {
	a := Seeded(11).Split()
	for range 1000 {
		a.Uint64()
	}
	a.Float64()
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := Seeded(99)
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Seed()
	if sb, _ := b.Seed(); sa != sb {
		t.Error("the restored source reports another seed")
	}
	for i := range 100 {
		if x, y := a.Float64(), b.Float64(); x != y {
			t.Fatalf("draw %d after the restore: %v != %v", i, x, y)
		}
	}
	if _, err := Secure().MarshalBinary(); err == nil {
		t.Error("a secure source saved its position")
	}
	if _, err := Seeded(1).Bulk().MarshalBinary(); err == nil {
		t.Error("a bulk source saved its position")
	}
	if err := Secure().UnmarshalBinary(st); err == nil {
		t.Error("a secure source took a saved position")
	}
	if err := Seeded(1).UnmarshalBinary(st[:5]); err == nil {
		t.Error("a truncated position was accepted")
	}
}
