//go:build !amd64 || purego

package online

// symPacked is symPackedGo: no assembly route on this architecture or
// under purego.
var symPacked = symPackedGo

// sqDist is sqDistGo.
var sqDist = sqDistGo
