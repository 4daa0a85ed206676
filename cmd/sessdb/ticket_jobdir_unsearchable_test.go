package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A ticket copied into another job dir whose own job_dir the promoting
// worker cannot look up (its parent made unsearchable to the worker: here
// root's, 0700) is not taken for a job dir moved since its resolve: the
// copy's promote was promoted as the job's, and the job's own promote
// (root's) told repeat. Now the copy is refused as not a valid ticket,
// nothing written, and the job's own promote lands.
func TestATicketWhoseJobDirCannotBeLookedUpIsNotTakenForAMovedOne(t *testing.T) {
	w := newNobodysWorker(t)
	priv := filepath.Join(w.base, "priv")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	giveToNobody(priv)
	job := filepath.Join(priv, "j")
	if code, out, errs := w.runAs("resolve", "--sessions-dir", w.root, "--key", workerKey, "--job-dir", job, "--pi-version", "0.58.3"); code != 0 {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header+`{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(w.base, "copy")
	if out, err := exec.Command("cp", "-a", job, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	giveToNobody(cp)
	if err := os.Chown(priv, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := w.runAs("promote", "--sessions-dir", w.root, "--job-dir", cp, "--pi-version", "0.58.3")
	if code != 1 || out != "" || !strings.Contains(errs, "not a valid ticket: job_dir cannot be looked up") || strings.Contains(errs, job) {
		t.Fatalf("the copy's promote as nobody: exit %d\n%s%s\nwant exit 1, not a valid ticket, job_dir not looked up, its path not quoted", code, out, errs)
	}
	code, out, errs = runCLI(t, "promote", "--sessions-dir", w.root, "--job-dir", job, "--pi-version", "0.58.3")
	if code != 0 || !strings.Contains(out, `"promoted":true`) || !strings.Contains(out, `"repeat":false`) {
		t.Fatalf("the job's own promote: exit %d\n%s%s\nwant promoted, no repeat", code, out, errs)
	}
}
