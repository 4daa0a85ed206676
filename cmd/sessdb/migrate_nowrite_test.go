package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key dir of the worker's own that the worker may not write in (0500:
// chmod'ed by hand, a restore that kept odd modes) cannot take what a
// migration writes there: the run as the worker fails the key (meta.db's
// create, or the rollback's legacy temps, refused), nothing written. Its
// dry run planned "migrate", exit 0, in both directions: a plan the run
// does not carry out. The dry run now asks the kernel, as the run's
// writes would be judged (fsat.AccessAt, as reap's dry run does), and
// fails the key as the run does, its line naming nothing written or
// removed, as the run's.
func TestTheWorkersDryRunsFailAKeyDirItMayNotWriteInAsTheRunsDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	w := newNobodysWorker(t)
	dir := filepath.Join(w.root, workerKey)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"current.jsonl": header,
		"pi-version":    "0.58.3",
		"venue":         "local",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{w.root, dir, filepath.Join(dir, "current.jsonl"), filepath.Join(dir, "pi-version"), filepath.Join(dir, "venue")} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return strings.Join(out, " ")
	}
	for _, dir2 := range []string{"to meta.db", "--to-legacy"} {
		if dir2 == "--to-legacy" {
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := w.runAs("migrate", w.root); code != exitOK {
				t.Fatalf("the worker's migration into meta.db: exit %d\n%s\n%s", code, out, errs)
			}
		}
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		before := entries()
		args := func(extra ...string) []string {
			a := []string{"migrate"}
			if dir2 == "--to-legacy" {
				a = append(a, dir2)
			}
			return append(append(a, extra...), w.root)
		}
		dryCode, dryOut, dryErrs := w.runAs(args("--dry-run")...)
		code, out, errs := w.runAs(args()...)
		if code != exitFault || !strings.Contains(out, "failed") {
			t.Fatalf("%s: the worker's run over a key dir it may not write in: exit %d\n%s\n%s; want the key failed", dir2, code, out, errs)
		}
		if dryCode != code || !strings.Contains(dryOut, workerKey+"  failed") || !strings.Contains(dryOut, "permission denied") {
			t.Errorf("%s: the worker's dry run: exit %d\n%s\n%s\nthe run: exit %d\n%s\nwant the key failed alike, permission denied", dir2, dryCode, dryOut, dryErrs, code, out)
		}
		// Neither failed line lists a plan: the run wrote and removed
		// nothing, and its dry run says what the run does. Before, the
		// dry run's line said "removes pi-version venue" (to meta.db) and
		// both of --to-legacy's said "writes pi-version venue; removes
		// meta.db".
		for what, o := range map[string]string{"the dry run": dryOut, "the run": out} {
			for _, line := range strings.Split(o, "\n") {
				if strings.HasPrefix(line, workerKey+"  failed") && (strings.Contains(line, "; writes ") || strings.Contains(line, "; removes ")) {
					t.Errorf("%s: %s's failed line lists what was not done: %s", dir2, what, line)
				}
			}
		}
		if after := entries(); after != before {
			t.Errorf("%s: the key dir held %q and holds %q; want nothing written", dir2, before, after)
		}
	}
}
