package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key its owner cannot open (its meta.db mode 0000) has each of its
// files judged all the same: check run as that owner names the meta.db
// and the transcript, each lacking its owner's read bit, and --repair
// gives both their bits back, after which the worker's next job resumes.
func TestCheckAsTheOwnerNamesEachFileOfAKeyItCannotOpen(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	for _, name := range []string{"meta.db", "current.jsonl"} {
		if err := os.Chmod(filepath.Join(w.root, workerKey, name), 0); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := w.runAs("check", w.root)
	for _, want := range []string{
		workerKey + "/meta.db: mode: mode 0000: its owner may not read or write the meta.db",
		workerKey + "/current.jsonl: mode: mode 0000: its owner may not read the current.jsonl",
	} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("check as the owner: exit %d, no %q in\n%s\n%s", code, want, out, errs)
		}
	}
	code, out, errs = w.runAs("check", "--repair", w.root)
	if code != 0 || strings.Count(out, "gave its owner the bits it lacked: mode 0000, now") != 2 {
		t.Fatalf("check --repair as the owner: exit %d, want 0 and both files given their bits\n%s\n%s", code, out, errs)
	}
	if resolved, promoted := w.job("job-2"); !strings.Contains(resolved, `"resume":true`) || !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("the job after the repair: %s%s; want it resumed and promoted", resolved, promoted)
	}
}

// A key its owner cannot open has only its regular files judged by lstat:
// a directory at the transcript's name, lacking its owner's bits, is not
// a transcript of the owner's that lacks them, and is given none.
func TestCheckAsTheOwnerJudgesOnlyTheFilesOfAKeyItCannotOpen(t *testing.T) {
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("first promote: %s", promoted)
	}
	kd := filepath.Join(w.root, workerKey)
	if err := os.Remove(filepath.Join(kd, "current.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(kd, "current.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chown(filepath.Join(kd, "current.jsonl"), nobody, nobody)
	}
	for _, name := range []string{"current.jsonl", "meta.db"} {
		if err := os.Chmod(filepath.Join(kd, name), 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(kd, "current.jsonl"), 0o700) })
	code, out, errs := w.runAs("check", "--repair", w.root)
	if !strings.Contains(out, workerKey+"/meta.db: mode: mode 0000") || strings.Contains(out, "current.jsonl: mode:") {
		t.Fatalf("check --repair as the owner: exit %d; want the meta.db's mode named, and no mode of the directory at the transcript's name\n%s\n%s", code, out, errs)
	}
	if fi, err := os.Lstat(filepath.Join(kd, "current.jsonl")); err != nil || fi.Mode().Perm() != 0 {
		t.Fatalf("the directory at the transcript's name after --repair: %v, %v; want 0000 as it was", fi.Mode().Perm(), err)
	}
}
