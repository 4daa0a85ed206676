package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/sample"
	"sessdb/store"
)

// A reap-owned dir a promotion landed in is restored over an empty key
// dir its runner may not read (mode 0, as an operator's chmod or another
// user's mkdir leaves it): rename(2) replaces an empty directory without
// reading it. The dry run says so too, and so does check, rather than
// taking the name for taken (ErrReapedKeyExists) because the look inside
// it was refused (EACCES). As root, sessdb runs as nobody in a child.
// (The dry run still fails the key dir as a key it cannot read.)
func TestAReapedDirIsRestoredOverAnEmptyKeyDirItsRunnerMayNotRead(t *testing.T) {
	atSampleTime(t)
	base, err := os.MkdirTemp("", "sessdb-reaped-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	landed := store.Key("github", "acme/widget", "pi/issue-landed")
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "sessions", landed), 0o700); os.RemoveAll(base) })
	root := filepath.Join(base, "sessions")
	if err := os.Rename(copySample(t), root); err != nil {
		t.Fatal(err)
	}
	aside := store.ReapedPrefix + landed + "-0123456789abcdef"
	copyDir(t, filepath.Join(root, sample.Mixed), filepath.Join(root, aside))
	if err := os.Mkdir(filepath.Join(root, landed), 0o700); err != nil {
		t.Fatal(err)
	}
	runAs := unprivileged(t, base, func() {
		filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	})
	if err := os.Chmod(filepath.Join(root, landed), 0); err != nil {
		t.Fatal(err)
	}
	if _, out, errs := runAs("check", root); !strings.Contains(out, "the next reap or check --repair moves it back to "+landed) {
		t.Errorf("check: want its line on %s to say the next reap moves it back\nstdout:\n%s\nstderr:\n%s", aside, out, errs)
	}
	// The key dir itself is a key the walk cannot read (exit 1, issue
	// 12) in the dry run, which restores nothing; what is asserted is the
	// restore, planned as the run then does it.
	if _, out, errs := runAs("reap", "--dry-run", root); !strings.Contains(out, "would restore 1") || strings.Contains(out+errs, "look at both") {
		t.Errorf("reap --dry-run: want one restore planned\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	if _, out, errs := runAs("reap", root); !strings.Contains(out, "restored 1") {
		t.Errorf("reap: want one restored\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	if _, err := os.Lstat(filepath.Join(root, landed, "meta.db")); err != nil {
		t.Errorf("the key after the reap: %v; want the reap-owned dir restored there", err)
	}
}
