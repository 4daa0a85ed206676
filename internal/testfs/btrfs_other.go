//go:build !linux

package testfs

import (
	"os"
	"testing"
)

// SmallBtrfs needs Linux's btrfs and loop devices: elsewhere t is skipped
// (failed where BtrfsEnv is set).
func SmallBtrfs(t testing.TB, size int64) string {
	t.Helper()
	if os.Getenv(BtrfsEnv) != "" {
		t.Fatal("btrfs is Linux's")
	}
	t.Skip("btrfs is Linux's")
	return ""
}
