package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir whose meta.db has a second name (a hard link) is one
// a reap and check --repair fail every time, whatever the file's mode: they
// open that meta.db as a writer, which gives a file of more names one of
// its own first, and nothing may be made in a dir a reap moved aside.
// check says so, and that removing the other name clears it; the dry run
// fails it as the run does, and once the other name is gone the reap
// finishes it. Before (7fda0b1), check advised a chmod u+w, which cleared
// nothing, and every reap, its dry run included, skipped the dir with a
// false cause ("removed since it was looked at, by the reap removing the
// dir"), exit 0, the dir left for ever (mutlate48).
func TestCheckSaysAReapedDirsLinkedMetaDBFailsEveryReap(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  os.FileMode
		aside func(w nobodysWorker) string
	}{
		{"a promotion landed in it", 0o400, func(w nobodysWorker) string { return filepath.Join(w.root, landedAside(t, w)) }},
		{"a killed reap's", 0o400, func(w nobodysWorker) string { return killedReapsAside(t, w) }},
		{"a killed reap's, meta.db writable", 0o600, func(w nobodysWorker) string { return killedReapsAside(t, w) }},
		{"a promotion landed in it, meta.db writable", 0o600, func(w nobodysWorker) string { return filepath.Join(w.root, landedAside(t, w)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			aside := c.aside(w)
			meta := filepath.Join(aside, "meta.db")
			if err := os.Chmod(meta, c.mode); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(w.base, "meta.db.other-name")
			if err := os.Link(meta, other); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"check"}, {"check", "--repair"}} {
				code, out, errs := w.runAs(append(args, w.root)...)
				var line string
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, "reap-interrupted") {
						line = l
					}
				}
				if code == exitOK || !strings.Contains(line, "another name") || !strings.Contains(line, "until the other name is removed") ||
					strings.Contains(line, "chmod") || strings.Contains(line, "moves it back") || strings.Contains(line, "removes it") {
					t.Errorf("%v: exit %d, finding %q; want it to say the dir fails every reap until its meta.db's other name is removed\nstdout:\n%s\nstderr:\n%s", args, code, line, out, errs)
				}
			}
			// What the finding says: the reap, and its dry run, fail it,
			// a chmod does not help, and once the other name is gone the
			// reap finishes it.
			for _, args := range [][]string{{"reap", "--dry-run"}, {"reap"}} {
				code, out, errs := w.runAs(append(args, w.root)...)
				// A meta.db its owner may not write fails the open first
				// (permission denied); one it may, the other name.
				if code != exitFault || !strings.Contains(out, "failed        "+filepath.Base(aside)) || c.mode&0o200 != 0 && !strings.Contains(out+errs, "names (a hard link)") {
					t.Errorf("%v: exit %d; want the dir failed for its meta.db's other name, exit 1\n%s%s", args, code, out, errs)
				}
			}
			if err := os.Chmod(meta, 0o600); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := w.runAs("reap", w.root); code != exitFault || !strings.Contains(out, "failed        "+filepath.Base(aside)) || !strings.Contains(out+errs, "names (a hard link)") {
				t.Errorf("reap once meta.db has u+w: exit %d; want the dir failed still, for the other name\n%s%s", code, out, errs)
			}
			if err := os.Remove(other); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := w.runAs("reap", w.root); code != exitOK || strings.Contains(out, "failed") {
				t.Errorf("reap once the other name is gone: exit %d; want it finished\n%s%s", code, out, errs)
			}
			if _, err := os.Lstat(aside); !os.IsNotExist(err) {
				t.Errorf("%s after the reap: %v; want it gone", aside, err)
			}
		})
	}
}

// A read-only meta.db of one name is one a reap gives its owner's write
// bit back to: check does not say every reap fails its dir, and the reap
// finishes it.
func TestCheckOfAReapedDirsReadOnlyMetaDBOfOneNameSaysTheReapFinishesIt(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	aside := killedReapsAside(t, w)
	if err := os.Chmod(filepath.Join(aside, "meta.db"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", w.root}} {
		_, out, errs := w.runAs(args...)
		if !strings.Contains(out, filepath.Base(aside)+": reap-interrupted: ") || strings.Contains(out, "another name") || strings.Contains(out, "chmod u+w") {
			t.Errorf("%v:\n%s%s\nwant the dir's finding, which does not say every reap fails it", args, out, errs)
		}
	}
	code, out, errs := w.runAs("reap", w.root)
	if code != exitOK || strings.Contains(out, "failed") {
		t.Errorf("reap: exit %d\n%s%s\nwant the dir finished, exit 0", code, out, errs)
	}
	if _, err := os.Lstat(aside); !os.IsNotExist(err) {
		t.Errorf("%s after the reap: %v; want it gone\n%s%s", aside, err, out, errs)
	}
}
