package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir whose meta.db, or the dir itself, another user owns,
// readable but not writable by its runner (root's: a key dir an older
// sessdb made as root under umask 022, renamed aside by root's reap that
// was killed), is one its runner's check can read, and its reap cannot
// finish: a reap and check --repair open its meta.db to write and remove
// the dir's entries, and give bits only to what is their runner's own.
// check's finding said "the next reap or check --repair removes it"; the
// worker's reap failed it, "open .../meta.db: permission denied" (or the
// dir's entries), exit 1, every time. The finding names the other user,
// whose reap (here root's) finishes it, as it does for one the runner
// may not read (b154ef0).
func TestCheckOfAReapedDirAnotherUserOwnsReadableNamesThatUsersReap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the files to root and run sessdb as nobody")
	}
	for _, tc := range []struct {
		name      string
		dir, meta bool
		what      string
	}{
		{"its meta.db", false, true, "its meta.db is uid 0's"},
		{"the dir and its meta.db", true, true, "the dir is uid 0's"},
		{"the dir", true, false, "the dir is uid 0's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			aside := killedReapsDir(t, w)
			meta := filepath.Join(aside, "meta.db")
			if tc.meta {
				if err := os.Chown(meta, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			if tc.dir {
				if err := os.Chown(aside, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			os.Chmod(meta, 0o644)
			os.Chmod(aside, 0o755)
			name := filepath.Base(aside)
			for _, args := range [][]string{{"check", w.root}, {"check", "--repair", w.root}} {
				_, out, errs := w.runAs(args...)
				if !strings.Contains(out, name+": reap-interrupted: ") || strings.Contains(out, "the next reap") ||
					!strings.Contains(out, tc.what) || !strings.Contains(out, "run as that user, or root, finishes it") {
					t.Errorf("%s as nobody:\n%s%s\nwant the dir's finding to name its owner, uid 0, whose reap finishes it, and no next reap", strings.Join(args[:len(args)-1], " "), out, errs)
				}
			}
			// What it says holds: nobody's reap fails it, root's finishes it.
			if code, out, errs := w.runAs("reap", w.root); code != 1 || !strings.Contains(out, "failed        "+name) {
				t.Errorf("reap as nobody: exit %d\n%s%s\nwant the dir failed, exit 1", code, out, errs)
			}
			if code, out, errs := runCLI(t, "reap", w.root); code != 0 || !strings.Contains(out, name) {
				t.Errorf("reap as root: exit %d\n%s%s\nwant the dir finished, exit 0", code, out, errs)
			}
			if _, err := os.Lstat(aside); !os.IsNotExist(err) {
				t.Errorf("%s after root's reap: %v; want it gone", aside, err)
			}
		})
	}
}
