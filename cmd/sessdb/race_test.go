//go:build race

package main

// raceBuild is true under the race detector, which makes every key cost
// many times more; the 10,000-key test then walks fewer keys (a race shows
// with a thousand as well as with ten thousand).
const raceBuild = true
