//go:build !linux

package fsat

import "testing"

func refuseFsids(*testing.T)      {}
func countFsids(*testing.T, *int) {}
func refuseChmodPath(*testing.T)  {}
