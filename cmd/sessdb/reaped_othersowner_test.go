package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir another user owns (root's, in a worker's root: a key
// dir an older sessdb made as root, renamed aside by root's reap, which
// was killed) is one the worker's check cannot read: its finding named
// "every reap and check --repair fails it until its owner gives them back
// (chmod u+rwx ...)". Its owner has every bit already, and a reap run as
// that owner, or root, finishes it: the chmod named changes nothing, and
// "every reap" is not so. The finding names the owner, and that a reap or
// check --repair run as that user or root finishes it; the worker's own
// still fail it.
func TestCheckOfAReapedDirAnotherUserOwnsNamesThatUsersReap(t *testing.T) {
	t.Run("the dir", func(t *testing.T) { checkOfAReapedDirRootOwns(t, true, 0) })
	t.Run("its meta.db", func(t *testing.T) { checkOfAReapedDirRootOwns(t, false, 0) })
	// A user neither root nor the runner: the uid named is its owner's,
	// not root's (the one whose reap finishes every dir).
	t.Run("the dir, another user's", func(t *testing.T) { checkOfAReapedDirRootOwns(t, true, 4321) })
	t.Run("its meta.db, another user's", func(t *testing.T) { checkOfAReapedDirRootOwns(t, false, 4321) })
}

// checkOfAReapedDirRootOwns gives uid (root, 0, or another user) a
// killed reap's dir (dir) and its meta.db, or its meta.db alone, in a
// nobody's root.
func checkOfAReapedDirRootOwns(t *testing.T, dir bool, uid int) {
	w := newNobodysWorker(t)
	aside := killedReapsDir(t, w)
	owned, what := []string{filepath.Join(aside, "meta.db")}, fmt.Sprintf("its meta.db is uid %d's", uid)
	if dir {
		owned, what = append(owned, aside), fmt.Sprintf("the dir is uid %d's", uid)
	}
	for _, p := range owned {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(aside, 0o700); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(aside)
	// Whose reap finishes it: root's, and the owner's where that is root
	// (another user, owning no sessions root, may not walk nobody's).
	finishes := "run as that user, or root, finishes it"
	if uid != 0 {
		finishes = fmt.Sprintf("run as root finishes it (not one run as uid %d", uid)
	}
	for _, args := range [][]string{{"check", w.root}, {"check", "--repair", w.root}} {
		_, out, errs := w.runAs(args...)
		if !strings.Contains(out, name+": reap-interrupted: ") || strings.Contains(out, "chmod u+rwx") || strings.Contains(out, "every reap") ||
			!strings.Contains(out, what) || !strings.Contains(out, finishes) {
			t.Errorf("%s as nobody:\n%s%s\nwant the dir's finding to name its owner, uid %d, whose reap finishes it, and no chmod", strings.Join(args[:len(args)-1], " "), out, errs, uid)
		}
	}
	// What it says holds: root's reap finishes it.
	if code, out, errs := runCLI(t, "reap", w.root); code != 0 || !strings.Contains(out, name) {
		t.Errorf("reap as root: exit %d\n%s%s\nwant the dir finished, exit 0", code, out, errs)
	}
	if _, err := os.Lstat(aside); !os.IsNotExist(err) {
		t.Errorf("%s after root's reap: %v; want it gone", aside, err)
	}
}
