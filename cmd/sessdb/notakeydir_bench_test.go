package main

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkNotAKeyDir is the check every command makes of its sessions
// root (config.dir), on a root seven components deep, as given and
// through a link: a job's resolve and promote pay it once each.
func BenchmarkNotAKeyDir(b *testing.B) {
	deep := filepath.Join(b.TempDir(), "a", "b", "c", "d", "e", "sessions")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(b.TempDir(), "root")
	if err := os.Symlink(deep, link); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, root string }{{"as-given", deep}, {"through-a-link", link}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := notAKeyDir("PI_SESSIONS_DIR", c.root); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
