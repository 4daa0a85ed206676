package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fleet's expired key whose own file's name holds what its unlink is
// refused (a directory: EISDIR; an immutable file: EPERM, root's too) is
// failed by its dry run as by the run, exit 1, naming why, and kept
// whole, its record and its file: the run asks what the unlink meets
// before it deletes the record. Before, the dry run asked only for leave
// to write in the key dir: "would remove", exit 0, where the run removed
// the key's record and failed it for its file; later both failed it, but
// the run had deleted the record first, leaving the file an orphan every
// reap failed on.
func TestFleetReapDryRunAsksWhatTheUnlinkOfTheKeysFileMeets(t *testing.T) {
	for _, what := range []string{"directory", "immutable"} {
		t.Run(what, func(t *testing.T) {
			f := startFleet(t)
			markDir(t)
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
			files, _ := filepath.Glob(filepath.Join(f.dir, workerKey, "*.jsonl"))
			if len(files) != 1 {
				t.Fatalf("the key's files: %v", files)
			}
			file := workerKey + "/" + filepath.Base(files[0])
			var why string
			switch what {
			case "directory":
				if err := os.Remove(files[0]); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(files[0], 0o700); err != nil {
					t.Fatal(err)
				}
				why = "unlink " + file + ": is a directory"
			case "immutable":
				if out, err := exec.Command("chattr", "+i", files[0]).CombinedOutput(); err != nil {
					t.Skipf("chattr +i: %v: %s (root on ext4, xfs or btrfs is needed)", err, out)
				}
				t.Cleanup(func() { exec.Command("chattr", "-i", files[0]).Run() })
				why = "remove " + file + ": operation not permitted: it is immutable"
			}
			code, out, errs := runCLI(t, "reap", "--dry-run")
			if code != exitFault || !strings.Contains(out, "failed        "+workerKey+"  ("+why) {
				t.Errorf("dry run: exit %d; want 1, the key failed on its file (%s), as the run\nstdout:\n%s\nstderr:\n%s", code, why, out, errs)
			}
			code, out, errs = runCLI(t, "reap")
			if code != exitFault || strings.Contains(out, "removed") || !strings.Contains(out, "failed        "+workerKey+"  ("+why) {
				t.Errorf("reap: exit %d; want 1, the key kept whole and failed on its file (%s), in its dry run's words\nstdout:\n%s\nstderr:\n%s", code, why, out, errs)
			}
			// Kept whole: its record still names the file.
			if code, out, errs := runCLI(t, "dump", "--json"); code != exitOK || !strings.Contains(out, `"key":"`+workerKey+`"`) || !strings.Contains(out, filepath.Base(files[0])) {
				t.Errorf("dump after the reap: exit %d; want the key's record, naming its file\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
		})
	}
}
