package fsat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// StatNoAutomount follows as many links in a path as stat(2) does on
// Linux (40) and no more: a chain of 40 links is the file's stat, one of
// 41 is ELOOP, as the kernel answers each.
func TestStatNoAutomountFollowsFortyLinksAsStatDoes(t *testing.T) {
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "l0"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 41; i++ {
		if err := os.Symlink(fmt.Sprintf("l%d", i-1), filepath.Join(base, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{40, 41} {
		p := filepath.Join(base, fmt.Sprintf("l%d", n))
		var want unix.Stat_t
		werr := unix.Stat(p, &want)
		got, err := StatNoAutomount(p)
		switch {
		case n == 40 && (werr != nil || err != nil || got.Ino != want.Ino):
			t.Errorf("a chain of 40 links: stat %v, StatNoAutomount %v (ino %d, want %d)", werr, err, got.Ino, want.Ino)
		case n == 41 && (!errors.Is(werr, unix.ELOOP) || !errors.Is(err, unix.ELOOP)):
			t.Errorf("a chain of 41 links: stat %v, StatNoAutomount %v; want ELOOP of each", werr, err)
		}
	}
}
