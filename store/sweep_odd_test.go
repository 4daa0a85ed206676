package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sessdb/gates"
)

// What is at a promotion temp's name but is not a regular file (a FIFO,
// an empty directory, a symbolic link) is no temp a promotion wrote:
// check reports it as a problem --repair leaves (not-a-regular-file,
// link), and removeTemps lists regular files only. The promotion's own
// sweep and the roll-forward's (check --repair of a pending promotion)
// removed whatever was at such a name, a link itself, while check
// --repair said of it "left as is" and counted it remaining.
func TestTheTempSweepsLeaveWhatIsNotARegularFile(t *testing.T) {
	odd := map[string]func(string) error{
		tmpPrefix + "00000000000000f1": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		tmpPrefix + "00000000000000f2": func(p string) error { return os.Mkdir(p, 0o700) },
		tmpPrefix + "00000000000000f3": func(p string) error { return os.Symlink(filepath.Join(filepath.Dir(p), TranscriptName), p) },
	}
	make := func(t *testing.T, root string) {
		t.Helper()
		for n, mk := range odd {
			if err := mk(filepath.Join(root, testKey, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := func(t *testing.T, root, after string) {
		t.Helper()
		for n := range odd {
			if _, err := os.Lstat(filepath.Join(root, testKey, n)); err != nil {
				t.Errorf("after %s: %s: %v", after, n, err)
			}
		}
	}
	t.Run("promotion", func(t *testing.T) {
		s, root, _ := newTestStore(t, gates.Bounds{})
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
		make(t, root)
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "second")
		left(t, root, "a promotion")
	})
	t.Run("check --repair of a pending promotion", func(t *testing.T) {
		s, root, clock := newTestStore(t, gates.Bounds{})
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		stage(t, jobDir, append(staged(t, jobDir), transcriptBytes(clock.now, "second")...))
		crashAfterCommit(t, s, root, sess)
		make(t, root)
		found, _ := chkRun(t, s, true)
		if chkFind(found, testKey+"/"+TranscriptName, KindPendingPromotion) == nil &&
			chkFind(found, testKey+"/meta.db", KindPendingPromotion) == nil {
			t.Fatalf("no pending promotion found: %+v", found)
		}
		left(t, root, "check --repair")
		for n := range odd {
			for _, f := range found {
				if f.Path == testKey+"/"+n && (f.Repaired || !f.Remains) {
					t.Errorf("%s: %s repaired %v, remains %v: %s", n, f.Kind, f.Repaired, f.Remains, f.Repair)
				}
			}
		}
	})
}
