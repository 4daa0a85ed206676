package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir its runner owns but may not read or enter (0300, 0100,
// 0600), or whose meta.db it may not read (0200), cannot be looked at by
// a dry run, which changes nothing: it fails it, permission denied. The
// run fails it too, leaving it and its mode as they were, so that the dry
// run plans what the run does; the owner's chmod lets the next reap
// finish it. Before, the run gave itself u+rwx (u+rw) first and finished
// the dir, exit 0, where its dry run had failed it, exit 1. check, and
// check --repair, which fails it too, say so, and name the chmod: they
// said the next reap or check --repair retries.
func TestAReapOfAReapedDirItsOwnerMayNotReadFailsAsItsDryRunDoes(t *testing.T) {
	for _, m := range [][2]os.FileMode{{0o300, 0o600}, {0o100, 0o600}, {0o600, 0o600}, {0o500, 0o200}} {
		t.Run(fmt.Sprintf("%04o-%04o", m[0], m[1]), func(t *testing.T) { reapOfAnUnreadableReapedDir(t, m[0], m[1]) })
	}
}

func reapOfAnUnreadableReapedDir(t *testing.T, dirMode, metaMode os.FileMode) {
	w := newNobodysWorker(t)
	aside := killedReapsDir(t, w)
	if err := os.Chmod(filepath.Join(aside, "meta.db"), metaMode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(aside, dirMode); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(aside)
	dryCode, dryOut, dryErrs := w.runAs("reap", "--dry-run", w.root)
	code, out, errs := w.runAs("reap", w.root)
	if dryCode != code || code != exitFault || !strings.Contains(dryOut, "failed        "+name) || !strings.Contains(out, "failed        "+name) {
		t.Errorf("the dry run: exit %d\n%s%s\nthe run: exit %d\n%s%s\nwant both to fail the dir, exit %d", dryCode, dryOut, dryErrs, code, out, errs, exitFault)
	}
	// check says what every reap meets, and what ends it.
	for _, args := range [][]string{{"check", w.root}, {"check", "--repair", w.root}} {
		_, out, errs := w.runAs(args...)
		if !strings.Contains(out, name+": reap-interrupted: ") || !strings.Contains(out, "every reap and check --repair fails it") ||
			!strings.Contains(out, "chmod u+rwx") || strings.Contains(out, "retries") {
			t.Errorf("%s:\n%s%s\nwant the dir's finding to say every reap fails it until a chmod u+rwx, and not that the next one retries", strings.Join(args[:len(args)-1], " "), out, errs)
		}
	}
	os.Chmod(aside, 0o700)
	if st, err := os.Stat(filepath.Join(aside, "meta.db")); err != nil || st.Mode().Perm() != metaMode {
		t.Errorf("meta.db after the run: %v, %v; want it there, mode %04o", st, err, metaMode)
	}
}
