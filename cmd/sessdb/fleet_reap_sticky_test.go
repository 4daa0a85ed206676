package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An expired fleet key whose dir is sticky and another user's (root's,
// mode 1777, its file root's), reaped by the transcripts dir's owner
// (nobody), who may write in the dir but not remove root's file there:
// the dry run and the run fail the key on its file in the same words,
// the sticky rule named. Before, the run said only the kernel's "unlink
// <file>: operation not permitted".
func TestFleetReapOfAFileInAnothersStickyKeyDirSaysWhyAsItsDryRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root is needed to make the key dir another user's")
	}
	f, dir, runAs := nobodysFleet(t)
	now := clock
	t.Cleanup(func() { clock = now })
	clock = func() time.Time { return now().Add(-30 * 24 * time.Hour) }
	jd := filepath.Join(f.jobs, "job")
	if code, out, errs := runCLI(t, "resolve", "--key", workerKey, "--job-dir", jd, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	os.WriteFile(filepath.Join(jd, "session", "current.jsonl"), []byte(header), 0o600)
	if code, out, errs := runCLI(t, "promote", "--job-dir", jd, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
	}
	clock = now
	files, _ := filepath.Glob(filepath.Join(dir, workerKey, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the key's files: %v", files)
	}
	os.Lchown(filepath.Join(dir, ".sessdb-fleet"), nobody, nobody)
	kd := filepath.Join(dir, workerKey)
	os.Chown(kd, 0, 0)
	os.Chown(files[0], 0, 0)
	if err := os.Chmod(kd, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	why := "remove " + workerKey + "/" + filepath.Base(files[0]) + ": operation not permitted: the dir it is in is sticky"
	for _, args := range [][]string{{"reap", "--dry-run"}, {"reap"}} {
		code, out, errs := runAs(args...)
		if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  ("+why) {
			t.Errorf("%v: exit %d; want 1, the key failed on its file (%s)\nstdout:\n%s\nstderr:\n%s", args, code, why, out, errs)
		}
	}
	if _, err := os.Lstat(files[0]); err != nil {
		t.Errorf("the key's file: %v; want it left", err)
	}
}
