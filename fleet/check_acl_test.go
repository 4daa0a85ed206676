package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/shared"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// userACL is an access ACL: root rw, the worker named with user, the
// group nothing, the mask rwx, others other.
func userACL(user, other uint32) []byte {
	return testfs.ACL([3]uint32{testfs.ACLUserObj, 6, testfs.ACLNoID}, [3]uint32{testfs.ACLUser, user, worker},
		[3]uint32{testfs.ACLGroupObj, 0, testfs.ACLNoID}, [3]uint32{testfs.ACLMask, 7, testfs.ACLNoID}, [3]uint32{testfs.ACLOther, other, testfs.ACLNoID})
}

// Fleet check reads the access ACL of an entry root owns in the dir's
// owner's transcripts dir, as the kernel does: a key dir, a generation
// and the mark root owns, shared with the dir's owner by a named-user
// entry (setfacl -m u:worker:rwx), are no owner finding, where the mode
// bits alone (0700, 0600) say the owner may use none of them; and a
// generation others may read (0644) whose ACL names the owner with
// nothing is one, where the mode bits alone pass it.
func TestCheckReadsTheACLOfAnEntryRootOwns(t *testing.T) {
	shared1 := store.Key("github", "check-acl", "shared by an ACL")
	narrowed := store.Key("github", "check-acl", "narrowed by an ACL")
	f := workersFleet(t, worker, shared1, narrowed)
	setACL := func(p string, acl []byte) {
		t.Helper()
		if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
			t.Skipf("no access ACL on this file system (%v): not tested", err)
		}
	}
	own := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.Chown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	sharedGen, narrowedGen := f.genOf(shared1), f.genOf(narrowed)
	for p, perm := range map[string]uint32{shared1: 7, sharedGen: 4, shared.MarkName: 4} {
		mode := os.FileMode(0o600)
		if p == shared1 {
			mode = 0o700
		}
		own(filepath.Join(f.dir, p), mode)
		setACL(filepath.Join(f.dir, p), userACL(perm, 0))
	}
	own(filepath.Join(f.dir, narrowedGen), 0o644)
	setACL(filepath.Join(f.dir, narrowedGen), userACL(0, 4))
	owners := map[string]string{}
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		if fd.Kind == store.KindOwner {
			owners[fd.Path] = fd.Detail
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shared1, sharedGen, shared.MarkName} {
		if d, ok := owners[p]; ok {
			t.Errorf("%s: an owner finding (%s), though its ACL gives the dir's owner what the fleet needs", p, d)
		}
	}
	if _, ok := owners[narrowedGen]; !ok {
		t.Errorf("%s: no owner finding, though its ACL gives the dir's owner nothing, where others may read it", narrowedGen)
	}
}

// A key dir's mode mended by --repair whose look after fails (the
// transcripts dir gone from its path: the walk stops) is still reported,
// mended, with the error: the chmod is done for good, and a check that
// said nothing of it would leave the operator to think the dir as it was.
func TestCheckReportsAModeMendedBeforeTheLookAfterFailed(t *testing.T) {
	key := store.Key("github", "check-access", "look after fails")
	f, dir := workersKeyDirUnentered(t, key)
	away := f.dir + ".away"
	t.Cleanup(func() { os.Rename(away, f.dir); os.Chmod(dir, 0o700) })
	looks := 0
	f.b.hook = func(p, k string) error {
		if p == hookCheckOpen && k == key {
			if looks++; looks == 2 {
				// The look after the repair: the dir is moved away.
				os.Rename(f.dir, away)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var modes []store.Finding
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		if fd.Path == key && fd.Kind == store.KindMode {
			modes = append(modes, fd)
		}
		return nil
	})
	if looks < 2 {
		t.Fatalf("the key was looked at %d times: no look after the repair, and this test tests nothing", looks)
	}
	if err == nil {
		t.Errorf("check --repair whose look after the repair found the dir gone: no error")
	}
	if len(modes) != 1 || !modes[0].Repaired {
		t.Fatalf("the key dir's mode mended before the look after failed: %+v (error %v); want it reported once, repaired", modes, err)
	}
}

// A key dir's mode mended by --repair, whose look after finds another
// problem at its name (here the key dir moved away and a file put in its
// place: not a directory), reports that problem: only the same finding,
// the key dir's mode lacking again, is folded into the mended one, and
// the mended mode does not remain where no look found it lacking again.
func TestCheckReportsAnotherProblemFoundAtAMendedKeyDirsName(t *testing.T) {
	key := store.Key("github", "check-access", "replaced after its repair")
	f, dir := workersKeyDirUnentered(t, key)
	moved := f.dir + "-moved"
	t.Cleanup(func() { os.Remove(dir); os.Rename(moved, dir) })
	looks := 0
	f.b.hook = func(p, k string) error {
		if p == hookCheckOpen && k == key {
			if looks++; looks == 2 {
				// The look after the repair, before its lstat of the
				// key dir: a file takes the key dir's name.
				os.Rename(dir, moved)
				os.WriteFile(dir, nil, 0o600)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var mode, notDir []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		switch {
		case fd.Path == key && fd.Kind == store.KindMode:
			mode = append(mode, fd)
		case fd.Path == key && fd.Kind == store.KindNotADirectory:
			notDir = append(notDir, fd)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if looks < 2 {
		t.Fatalf("the key was looked at %d times: no look after the repair, and this test tests nothing", looks)
	}
	if len(mode) != 1 || !mode[0].Repaired || mode[0].Remains {
		t.Errorf("the key dir's mode: %+v; want one finding, repaired, not remaining (no look found it lacking again)", mode)
	}
	if len(notDir) != 1 || !notDir[0].Remains {
		t.Errorf("the file at the key dir's name after its repair: %+v; want it reported, remaining", notDir)
	}
}

// workersKeyDirUnentered is workersFleet with key run, its key dir made
// 0600, a mode its owner may not enter, and that dir.
func workersKeyDirUnentered(t *testing.T, key string) (*fixture, string) {
	t.Helper()
	f := workersFleet(t, worker, key)
	dir := filepath.Join(f.dir, key)
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	return f, dir
}
