//go:build !amd64 || purego

package online

// symPackedMul is symPackedMulGo: no assembly route on this architecture
// or under purego.
var symPackedMul = symPackedMulGo

// symPackedMulDist is symPackedMulDistGo.
var symPackedMulDist = symPackedMulDistGo

// cgUpdate is cgUpdateGo.
var cgUpdate = cgUpdateGo

// symRank2 is symRank2Go.
var symRank2 = symRank2Go
