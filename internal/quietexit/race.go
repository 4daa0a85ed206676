//go:build race

package quietexit

// raceBuilt is whether the binary was built with -race.
const raceBuilt = true
