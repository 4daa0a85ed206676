//go:build race

package quietexit

import "runtime"

// raceBuilt is whether the binary was built with -race.
const raceBuilt = true

// raceErrors is how many races the race detector has reported.
func raceErrors() int { return runtime.RaceErrors() }
