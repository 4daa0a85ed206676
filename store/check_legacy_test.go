package store

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store/legacy"
)

// A legacy file (a sidecar, the legacy lock, an .incoming temp) that is a
// FIFO or a directory is not the store's: reap leaves such a key whole and
// says so, and check reports it as the not-a-regular-file problem that
// --repair leaves. check said nothing of it: the key's legacy names were
// only listed, never looked at. Nothing opens the FIFO (a read of one with
// no writer would block): the look is an lstat, and resolve's read of a
// sidecar opens it O_NONBLOCK.
func TestCheckReportsALegacyFileThatIsNotARegularFile(t *testing.T) {
	mkfifo := func(p string) error { return syscall.Mkfifo(p, 0o600) }
	mkdir := func(p string) error { return os.Mkdir(p, 0o700) }
	for _, c := range []struct {
		name, file string
		make       func(string) error
		db         bool // a key with a meta.db (legacy files beside it)
	}{
		{"FIFO venue", legacy.VenueName, mkfifo, false},
		{"directory pi-version", legacy.PiVersionName, mkdir, false},
		{"FIFO context", legacy.ContextName, mkfifo, false},
		{"directory resume-chain", legacy.ResumeChainName, mkdir, false},
		{"FIFO lock", legacy.LockName, mkfifo, false},
		{"directory .incoming", TranscriptName + ".incoming", mkdir, false},
		{"FIFO venue beside meta.db", legacy.VenueName, mkfifo, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := Key("github", "legacy/check", c.name)
			if c.db {
				key = chkKey(t, s, c.name)
			} else {
				writeLegacy(t, root, key, map[string]string{
					TranscriptName: string(transcriptBytes(clock.now, "legacy")),
					"pi-version":   testPi,
				})
				os.Remove(filepath.Join(root, key, c.file))
			}
			if err := c.make(filepath.Join(root, key, c.file)); err != nil {
				t.Fatal(err)
			}
			path := key + "/" + c.file
			before := treeState(t, root)
			for _, repair := range []bool{false, true} {
				type result struct {
					found []Finding
					sum   CheckSummary
				}
				done := make(chan result, 1)
				go func() {
					f, sum := chkRun(t, s, repair)
					done <- result{f, sum}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("check (repair %v) hung on a %s", repair, c.name)
				}
				f := chkFind(r.found, path, KindNotRegular)
				if f == nil || f.Severity != SeverityProblem || f.Key != key || !f.Remains || f.Repaired || f.Detail == "" {
					t.Fatalf("check (repair %v): want a not-a-regular-file problem at %s that remains; found %+v", repair, path, r.found)
				}
				if repair && f.Repair == "" {
					t.Fatalf("check --repair says nothing of what it did with %s: %+v", path, f)
				}
				if r.sum.Remaining == 0 {
					t.Fatalf("check (repair %v): summary %+v counts no problem", repair, r.sum)
				}
				if after := treeState(t, root); after != before {
					t.Fatalf("check (repair %v) changed the tree:\n%s\nwas\n%s", repair, after, before)
				}
			}
		})
	}
}

// What the not-a-regular-file finding of a legacy file says resolve does
// with it is what resolve does: a sidecar is read as no value, and the
// legacy lock and an .incoming temp, which no reader reads (the legacy
// writer's own), are never read. It said "resolve reads it as no value"
// of the lock and the temps too.
func TestCheckSaysWhatResolveDoesWithALegacyFileThatIsNotARegularFile(t *testing.T) {
	for _, c := range []struct{ file, says string }{
		{legacy.VenueName, "resolve reads it as no value"},
		{legacy.LockName, "resolve never reads it"},
		{legacy.VenueName + ".incoming", "resolve never reads it"},
		{TranscriptName + ".incoming", "resolve never reads it"},
	} {
		t.Run(c.file, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := Key("github", "legacy/says", c.file)
			writeLegacy(t, root, key, map[string]string{
				TranscriptName: string(transcriptBytes(clock.now, "legacy")),
				"pi-version":   testPi,
			})
			os.Remove(filepath.Join(root, key, c.file))
			if err := os.Mkdir(filepath.Join(root, key, c.file), 0o700); err != nil {
				t.Fatal(err)
			}
			found, _ := chkRun(t, s, false)
			f := chkFind(found, key+"/"+c.file, KindNotRegular)
			if f == nil || !strings.Contains(f.Detail, c.says) {
				t.Fatalf("check of a directory at %s: %+v; want a not-a-regular-file problem that says %q", c.file, found, c.says)
			}
		})
	}
}
