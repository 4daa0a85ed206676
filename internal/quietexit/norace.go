//go:build !race

package quietexit

const raceBuilt = false
