package data

import "testing"

func BenchmarkLoadKDD(b *testing.B) {
	dir := testDataDir(b)
	for b.Loop() {
		if _, _, err := LoadKDD(dir, KDDOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
