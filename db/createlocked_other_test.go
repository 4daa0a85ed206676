//go:build !linux

package db

// madeByName says why a meta.db is named before its flock here: it is
// made unnamed on Linux alone.
func madeByName(string) string { return "not Linux" }
