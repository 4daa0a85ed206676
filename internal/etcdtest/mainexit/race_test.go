//go:build race

package mainexit

// raceBuilt is whether the test binary was built with -race.
const raceBuilt = true
