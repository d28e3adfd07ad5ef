package scatter

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dpal-dev/dpal/data"
)

// toyImages is n random 28×28 blobs with labels.
func toyImages(n int) *data.Dataset {
	rng := rand.New(rand.NewPCG(3, 4))
	d := &data.Dataset{Name: "toy", ClassNames: []string{"a", "b"}}
	for i := range n {
		d.X = append(d.X, blob(rng, 28, 28, 4))
		d.Class = append(d.Class, i%2)
	}
	return d
}

// cacheFile is the one file CachedFeatures keeps for d under c in dir.
func cacheFile(d *data.Dataset, c Config, dir string) string {
	k := Key(d, c)
	return filepath.Join(dir, hex.EncodeToString(k[:])+".f32")
}

func equalRows(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}

// A miss computes and stores, a hit reads back the same values, and any
// damage to the file is a recomputation that repairs it, never a stale or
// wrong read.
func TestCachedFeatures(t *testing.T) {
	d := toyImages(4)
	fresh, status, err := CachedFeatures(d, MNIST, "")
	if err != nil || status != CacheOff {
		t.Fatalf("no cache: %v, %v", status, err)
	}
	for _, row := range fresh.X {
		for _, v := range row {
			if float64(float32(v)) != v {
				t.Fatalf("coefficient %v is not float32-exact", v)
			}
		}
	}
	dir := t.TempDir()
	path := cacheFile(d, MNIST, dir)
	check := func(t *testing.T, want CacheStatus) {
		t.Helper()
		f, status, err := CachedFeatures(d, MNIST, dir)
		if err != nil {
			t.Fatal(err)
		}
		if status != want {
			t.Errorf("status %s, want %s", status, want)
		}
		if !equalRows(f.X, fresh.X) || !slices.Equal(f.Class, d.Class) || f.Name != "toy-scatter" {
			t.Errorf("%s: features or labels differ from a fresh transform", status)
		}
	}
	t.Run("miss", func(t *testing.T) { check(t, CacheMiss) })
	t.Run("hit", func(t *testing.T) { check(t, CacheHit) })
	damage := map[string]func([]byte) []byte{
		"flipped value":  func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"flipped sum":    func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"truncated":      func(b []byte) []byte { return b[:len(b)-40] },
		"extra byte":     func(b []byte) []byte { return append(b, 0) },
		"other key":      func(b []byte) []byte { b[len(cacheMagic)] ^= 1; return b },
		"other version":  func(b []byte) []byte { b[len(cacheMagic)-2] = '9'; return b },
		"empty":          func([]byte) []byte { return nil },
		"wrong row size": func(b []byte) []byte { b[len(cacheMagic)+32+8] ^= 1; return b },
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, hurt(b), 0o600); err != nil {
				t.Fatal(err)
			}
			check(t, CacheRecovered)
			check(t, CacheHit) // repaired
		})
	}
	t.Run("changed image is a miss", func(t *testing.T) {
		old := d.X[2][400]
		d.X[2][400] = old + 1e-9
		defer func() { d.X[2][400] = old }()
		if cacheFile(d, MNIST, dir) == path {
			t.Fatal("a changed pixel keeps the key")
		}
		f, status, err := CachedFeatures(d, MNIST, dir)
		if err != nil || status != CacheMiss {
			t.Fatalf("status %s, %v; want a miss", status, err)
		}
		if equalRows(f.X, fresh.X) {
			t.Error("changed image, same features")
		}
	})
	t.Run("changed config is a miss", func(t *testing.T) {
		c := MNIST
		c.Groups = 81
		if cacheFile(d, c, dir) == path {
			t.Fatal("a changed configuration keeps the key")
		}
		if _, status, err := CachedFeatures(d, c, dir); err != nil || status != CacheMiss {
			t.Fatalf("status %s, %v; want a miss", status, err)
		}
	})
	t.Run("mode 0600", func(t *testing.T) {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", st.Mode().Perm())
		}
	})
}

// A cache directory that cannot be written is a warning: the features
// are still returned.
func TestCachedFeaturesUnwritable(t *testing.T) {
	d := toyImages(2)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, status, err := CachedFeatures(d, MNIST, filepath.Join(file, "sub"))
	if err != nil || status != CacheMiss || f.Len() != 2 {
		t.Fatalf("status %s, %v", status, err)
	}
}

// An invalid configuration or image is Features' error, cached or not.
func TestCachedFeaturesRejects(t *testing.T) {
	d := toyImages(1)
	d.X[0] = d.X[0][:100]
	if _, _, err := CachedFeatures(d, MNIST, t.TempDir()); err == nil {
		t.Error("a short image was accepted")
	}
}

// FuzzReadCache: whatever a cache file holds, reading it either fails or
// returns rows of the asked shape with finite values, and never panics.
func FuzzReadCache(f *testing.F) {
	key := [32]byte{1, 2, 3}
	dir := f.TempDir()
	good := filepath.Join(dir, "good")
	if err := writeCache(dir, good, key, [][]float32{{1, 2}, {3, 4}}, 2); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "c")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		x, err := readCache(path, key, 2, 2)
		if err != nil {
			return
		}
		if len(x) != 2 || len(x[0]) != 2 || len(x[1]) != 2 {
			t.Fatalf("shape %d rows", len(x))
		}
	})
}

// Features32 and CachedFeatures32 (fresh and on a hit) hold exactly
// Features' coefficients rounded to float32, and nothing in float64.
func TestFeatures32(t *testing.T) {
	d := toyImages(5)
	f64, err := Features(d, MNIST)
	if err != nil {
		t.Fatal(err)
	}
	want := data.Dataset{X: f64.X}
	want.Float32()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		get  func() (*data.Dataset, error)
	}{
		{"Features32", func() (*data.Dataset, error) { return Features32(d, MNIST) }},
		{"miss", func() (*data.Dataset, error) { f, _, err := CachedFeatures32(d, MNIST, dir); return f, err }},
		{"hit", func() (*data.Dataset, error) { f, _, err := CachedFeatures32(d, MNIST, dir); return f, err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.get()
			if err != nil {
				t.Fatal(err)
			}
			if f.X != nil || f.Len() != d.Len() || f.Dim() != len(want.X32[0]) {
				t.Fatalf("X %v, %d rows of %d, want X nil, %d of %d", f.X != nil, f.Len(), f.Dim(), d.Len(), len(want.X32[0]))
			}
			if !slices.EqualFunc(f.X32, want.X32, slices.Equal) {
				t.Error("float32 features differ from Features rounded")
			}
		})
	}
}
