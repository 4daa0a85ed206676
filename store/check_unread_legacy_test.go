package store

import (
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store/legacy"
)

// A legacy sidecar that is there but whose read fails (a permission
// refused, an I/O error) is named by check: an unreadable problem at the
// sidecar's path, which --repair leaves, with every file kept. check said
// nothing of it (0 problems, exit 0), while resolve read it as no value
// (a cold start) and migrate failed the key: the one command an operator
// runs to find what is wrong was silent.
func TestCheckNamesALegacySidecarItCouldNotRead(t *testing.T) {
	for i, file := range []string{legacy.VenueName, legacy.PiVersionName, legacy.ResumeChainName, legacy.ContextName} {
		for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EIO} {
			t.Run(file+"/"+errno.Error(), func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				writeLegacy(t, root, testKey, map[string]string{
					TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
					"venue":        "local", "pi-version": testPi, "resume-chain": "2", "context": "1000 200000 anthropic/m",
				})
				before := treeState(t, root)
				for _, repair := range []bool{false, true} {
					n := 0
					faults.Set(func(p faults.Point) error {
						// Observe reads venue, pi-version, resume-chain,
						// context, in that order, once per look.
						if p == faults.LegacySidecarRead {
							if n++; (n-1)%4 == i {
								return errno
							}
						}
						return nil
					})
					found, sum := chkRun(t, s, repair)
					faults.Set(nil)
					path := testKey + "/" + file
					f := chkFind(found, path, KindUnreadable)
					if f == nil || !f.Remains || f.Repaired || !strings.Contains(f.Detail, errno.Error()) || sum.Remaining == 0 {
						t.Fatalf("check (repair %v) with %s's read failing (%v): %+v, %+v; want an unreadable problem at %s that remains", repair, file, errno, found, sum, path)
					}
					if after := treeState(t, root); after != before {
						t.Fatalf("check (repair %v) changed the tree:\n%s\nwas\n%s", repair, after, before)
					}
				}
			})
		}
	}
}

// Two legacy sidecars whose reads fail are each named by check: one
// unreadable problem per sidecar, at its path, with its own error, as dump
// lists them all (legacy_unreadable). Every pair of the four, the first
// refused (EACCES), the second an I/O error (EIO).
func TestCheckNamesEachLegacySidecarItCouldNotRead(t *testing.T) {
	files := []string{legacy.VenueName, legacy.PiVersionName, legacy.ResumeChainName, legacy.ContextName}
	for i := range files {
		for j := i + 1; j < len(files); j++ {
			t.Run(files[i]+"+"+files[j], func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				writeLegacy(t, root, testKey, map[string]string{
					TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
					"venue":        "local", "pi-version": testPi, "resume-chain": "2", "context": "1000 200000 anthropic/m",
				})
				n := 0
				faults.Set(func(p faults.Point) error {
					// Observe reads venue, pi-version, resume-chain,
					// context, in that order, once per look.
					if p == faults.LegacySidecarRead {
						n++
						switch (n - 1) % 4 {
						case i:
							return syscall.EACCES
						case j:
							return syscall.EIO
						}
					}
					return nil
				})
				found, sum := chkRun(t, s, false)
				faults.Set(nil)
				var unreadable []Finding
				for _, f := range found {
					if f.Kind == KindUnreadable {
						unreadable = append(unreadable, f)
					}
				}
				for k, c := range []struct {
					file  string
					errno syscall.Errno
				}{{files[i], syscall.EACCES}, {files[j], syscall.EIO}} {
					path := testKey + "/" + c.file
					f := chkFind(found, path, KindUnreadable)
					if f == nil || !f.Remains || !strings.Contains(f.Detail, c.errno.Error()) || !strings.Contains(f.Detail, c.file) {
						t.Errorf("check with %s (EACCES) and %s (EIO) failing: finding %d at %s = %+v; want an unreadable problem there with its own error (all: %+v)", files[i], files[j], k, path, f, found)
					}
				}
				if len(unreadable) != 2 || sum.Problems != 2 || sum.Remaining != 2 {
					t.Errorf("check with %s and %s failing: %d unreadable findings, summary %+v; want 2, one per sidecar: %+v", files[i], files[j], len(unreadable), sum, found)
				}
			})
		}
	}
}
