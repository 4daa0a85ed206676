package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fleet's reap that cannot remove an expired key's own file (its key
// dir 0500 to the worker that owns it) fails the key, exit 1, naming the
// dir, and keeps it whole, record and file, as a sessions root's reap
// refuses a key it cannot remove whole; check --repair gives the dir its
// bits and the next reap removes the key. Before, the removal was a log
// line alone: the reap said the key was removed and nothing failed, exit
// 0, and so did every reap after while the file stayed; each dry run said
// it would remove the key or the file, exit 0. Later the run deleted the
// record and then failed the key for its file, an orphan every reap
// failed on until the repair.
//
// The file younger than the grace period (its record's date old, the
// file copied back by hand): the key is kept whole all the same.
func TestFleetReapThatCannotRemoveAFileFailsItsKey(t *testing.T) {
	for _, young := range []bool{false, true} {
		t.Run(map[bool]string{false: "old file", true: "young file"}[young], func(t *testing.T) {
			fleetReapThatCannotRemoveAFile(t, young)
		})
	}
}

func fleetReapThatCannotRemoveAFile(t *testing.T, young bool) {
	startFleet(t)
	base, err := os.MkdirTemp("", "sessdb-fleet-unremovable-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "transcripts")
	kd := filepath.Join(dir, workerKey)
	t.Cleanup(func() { os.Chmod(kd, 0o700); os.RemoveAll(base) })
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	markDir(t)
	runAs := unprivileged(t, base, func() {
		os.Chown(base, nobody, nobody) // for the job dir
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	})
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	jd := filepath.Join(base, "job")
	if code, out, errs := runAs("resolve", "--key", workerKey, "--job-dir", jd, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	staged := filepath.Join(jd, "session", "current.jsonl")
	os.WriteFile(staged, []byte(header), 0o600)
	os.Chown(staged, nobody, nobody)
	if code, out, errs := runAs("promote", "--job-dir", jd, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
	}
	clock = now
	files, _ := filepath.Glob(filepath.Join(kd, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the key's files: %v", files)
	}
	if !young {
		old := now().Add(-30 * 24 * time.Hour)
		os.Chtimes(files[0], old, old)
	}
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}

	dry := func(what string) {
		t.Helper()
		code, out, errs := runAs("reap", "--dry-run")
		if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  (access "+workerKey+": permission denied)") {
			t.Errorf("dry run %s: exit %d; want 1, the key failed on its dir, as the run\nstdout:\n%s\nstderr:\n%s", what, code, out, errs)
		}
	}
	dry("of the expired key")
	// The run asks what the unlink meets before it deletes the record,
	// and keeps the key whole, in its dry run's words; so does the next.
	code, out, errs := runAs("reap")
	if code != exitFault || strings.Contains(out, "removed") ||
		!strings.Contains(out, "failed        "+workerKey+"  (access "+workerKey+": permission denied)") || !strings.Contains(out, ", failed 1") {
		t.Errorf("reap: exit %d; want 1, the key kept whole and failed on its dir\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if young {
		if _, err := os.Lstat(files[0]); err != nil {
			t.Fatalf("the file: %v", err)
		}
		return
	}
	dry("again")
	code, out, errs = runAs("reap", "--json")
	if code != exitFault || !strings.Contains(out, `{"action":"fail","key":"`+workerKey+`","path":"`+workerKey+`","dry_run":false,"detail":"access `+workerKey+`: permission denied"}`) ||
		!strings.Contains(out, `"removed":0,`) || !strings.Contains(out, `"failed":1,`) {
		t.Errorf("the next reap: exit %d; want 1, the key kept whole and failed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if _, err := os.Lstat(files[0]); err != nil {
		t.Fatalf("the file: %v", err)
	}
	if code, out, errs := runAs("check", "--repair"); code != exitOK {
		t.Fatalf("check --repair: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runAs("reap"); code != exitOK || strings.Contains(out, "failed") || !strings.Contains(out, "removed       "+workerKey+"  (expired key)") {
		t.Errorf("reap after the repair: exit %d; want 0, the key removed, nothing failed\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if _, err := os.Lstat(files[0]); !os.IsNotExist(err) {
		t.Errorf("the file after the repair: %v", err)
	}
}
