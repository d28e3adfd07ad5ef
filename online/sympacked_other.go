//go:build !amd64 || purego

package online

// symPackedMul is symPackedMulGo: no assembly route on this architecture
// or under purego.
var symPackedMul = symPackedMulGo

// sqDist is sqDistGo.
var sqDist = sqDistGo
