package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reap-owned dir whose meta.db lacks its owner's write bit and has a
// second name (a hard link) is one a reap gives no bit to (its chmod
// would change the file at that other name too), and a reap and check
// --repair, which open that meta.db as a writer, fail it every time: check
// says so, and what clears it, in its reap-interrupted finding. Before,
// check said "the next reap or check --repair moves it back" (a dir a
// promotion landed in) or "removes it" (a killed reap's), while both
// failed it, "permission denied", run after run.
func TestCheckSaysAReapedDirsLinkedReadOnlyMetaDBFailsEveryReap(t *testing.T) {
	for _, c := range []struct {
		name  string
		aside func(w nobodysWorker) string
	}{
		{"a promotion landed in it", func(w nobodysWorker) string { return filepath.Join(w.root, landedAside(t, w)) }},
		{"a killed reap's", func(w nobodysWorker) string { return killedReapsAside(t, w) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			aside := c.aside(w)
			meta := filepath.Join(aside, "meta.db")
			if err := os.Chmod(meta, 0o400); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(meta, filepath.Join(w.base, "meta.db.other-name")); err != nil {
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
				if code == exitOK || !strings.Contains(line, "another name") || !strings.Contains(line, "chmod u+w") ||
					strings.Contains(line, "moves it back") || strings.Contains(line, "removes it") {
					t.Errorf("%v: exit %d, finding %q; want it to say the dir fails every reap until its meta.db, which has another name, is given u+w\nstdout:\n%s\nstderr:\n%s", args, code, line, out, errs)
				}
			}
			// What the finding says: the reap fails it, and once the
			// bit is given it finishes it.
			if code, out, _ := w.runAs("reap", w.root); code != exitFault || !strings.Contains(out, "failed        "+filepath.Base(aside)) {
				t.Errorf("reap: exit %d; want the dir failed, exit 1\n%s", code, out)
			}
			if err := os.Chmod(meta, 0o600); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := w.runAs("reap", w.root); code != exitOK || strings.Contains(out, "failed") {
				t.Errorf("reap once meta.db has u+w: exit %d; want it finished\n%s%s", code, out, errs)
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
