package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
)

// A FIFO or a directory at a temp's name (a promotion temp, a meta.db
// temp) or at a moved-aside meta.db's name is no file a writer or a repair
// made: no temp sweep removes it (they remove regular files only), and
// reap leaves the key whole for it. check reports it as the
// not-a-regular-file problem --repair leaves, as it does a legacy file
// that is not a regular file. It reported a stray-temp that --repair then
// said it had removed ("removed by the roll-forward, or gone since it was
// found", repaired and remaining at once) while the file stayed, and a
// FIFO at an aside name as a damaged meta.db moved aside, a notice (exit
// 0 on a key reap will never remove).
func TestCheckReportsATempOrAsideNameThatIsNotARegularFile(t *testing.T) {
	mkfifo := func(p string) error { return syscall.Mkfifo(p, 0o600) }
	mkdir := func(p string) error {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(p, "x"), nil, 0o600)
	}
	for _, c := range []struct {
		name, file string
		make       func(string) error
		legacy     bool
	}{
		{"FIFO promotion temp", tmpPrefix + "00000000000000aa", mkfifo, false},
		{"directory promotion temp", tmpPrefix + "00000000000000ab", mkdir, false},
		{"FIFO meta.db temp", db.TempPrefix + "00000000000000ac", mkfifo, false},
		{"directory meta.db temp of a legacy key", db.TempPrefix + "00000000000000ad", mkdir, true},
		{"FIFO promotion temp of a legacy key", tmpPrefix + "00000000000000ae", mkfifo, true},
		{"FIFO at a moved-aside name", AsidePrefix + "20261201T150910Z", mkfifo, false},
		{"directory at a moved-aside name", AsidePrefix + "20261201T150911Z", mkdir, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := Key("github", "odd/temp", c.name)
			if c.legacy {
				writeLegacy(t, root, key, map[string]string{
					TranscriptName: string(transcriptBytes(clock.now, "legacy")),
					"pi-version":   testPi,
				})
			} else {
				key = chkKey(t, s, c.name)
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
				for _, f := range r.found {
					if f.Path == path && f.Kind != KindNotRegular {
						t.Errorf("check (repair %v) reports %s as %s (%s; repair %q, repaired %v)", repair, path, f.Kind, f.Detail, f.Repair, f.Repaired)
					}
				}
				f := chkFind(r.found, path, KindNotRegular)
				if f == nil || f.Severity != SeverityProblem || f.Key != key || !f.Remains || f.Repaired {
					t.Fatalf("check (repair %v): want a not-a-regular-file problem at %s that remains; found %+v", repair, path, r.found)
				}
				if repair && f.Repair == "" {
					t.Fatalf("check --repair says nothing of what it did with %s: %+v", path, f)
				}
				if r.sum.Remaining == 0 || r.sum.Repaired != 0 {
					t.Fatalf("check (repair %v): summary %+v; want the problem remaining, nothing repaired", repair, r.sum)
				}
				if after := treeState(t, root); after != before {
					t.Fatalf("check (repair %v) changed the tree:\n%s\nwas\n%s", repair, after, before)
				}
			}
		})
	}
}
