package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/testfs"
	"sessdb/store/legacy"
)

// worker is the uid and gid a test's sessions root is given: a user that
// is not the test's (root).
const worker = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root makes and gives files another user owns: run as root to test it")
	}
}

func uidOf(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

// givenToAWorker gives, when the test runs as root, root and everything
// under it to worker: what check judges is judged for the root's owner,
// and a root root owns judges nothing.
func givenToAWorker(t *testing.T, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	must(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, worker, worker)
	}))
}

// workersStore is a store whose root a worker owns, used by root.
func workersStore(t *testing.T) (*Store, string) {
	t.Helper()
	s, root, _ := newTestStore(t, gates.Bounds{})
	must(t, os.MkdirAll(root, 0o700))
	must(t, os.Chown(root, worker, worker))
	return s, root
}

// What root makes in a root a worker owns (a job run as root once, an
// operator's repair) is the worker's: a key dir, its meta.db and its
// transcript, after a first promotion and after a second, which replaces
// both. Before, they were root's, mode 0700 and 0600, and every resolve of
// the key by the worker exited 1 ("permission denied").
func TestWhatRootMakesInAWorkersRootIsTheWorkers(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	key := runJobKey(t, s, "first")
	runJob(t, s, key, localJob(), PromoteRequest{}, "second")
	for _, name := range []string{"", db.FileName, TranscriptName} {
		if uid, gid := uidOf(t, filepath.Join(root, key, name)); uid != worker || gid != worker {
			t.Errorf("%s/%s: owned by %d:%d, want the root's owner %d:%d", key, name, uid, gid, worker, worker)
		}
	}
	names, err := os.ReadDir(filepath.Join(root, key))
	must(t, err)
	if len(names) != 2 {
		t.Errorf("the key dir holds %d names, want meta.db and the transcript", len(names))
	}
}

// A key an older sessdb made as root in a root a worker owns (here by
// chown) passed every look while the worker's every resolve of it failed:
// check names each entry the worker may not use (owner), and --repair
// leaves it, saying why (a worker can put another user's file at a key's
// name: giving it away would hand that file over), until the operator's
// chown. An entry root owns that the worker may use through its group's
// bits is no finding; one in a group the worker is not in is; a legacy
// key's sidecar is judged as a resolve meets it.
func TestCheckNamesAKeyRootMadeInAWorkersRoot(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	whole := runJobKey(t, s, "whole")
	dbOnly := runJobKey(t, s, "meta.db only")
	byGroup := runJobKey(t, s, "by its group")
	foreignGroup := runJobKey(t, s, "by a group not the worker's")
	old := Key("github", "acme/owner", "legacy")
	writeLegacy(t, root, old, map[string]string{TranscriptName: string(transcriptBytes(s.opts.Now(), "legacy")), legacy.PiVersionName: testPi})
	must(t, os.Chown(filepath.Join(root, old), worker, worker))
	must(t, os.Chown(filepath.Join(root, old, TranscriptName), worker, worker))
	path := func(key, name string) string { return filepath.Join(root, key, name) }
	const notTheWorkers = 5000 // a group nobody is not in
	bad := []modeCase{
		{whole, ".", 0, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read, write or enter the key dir"},
		{whole, db.FileName, 0, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read or write the meta.db"},
		{whole, TranscriptName, 0, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read the current.jsonl"},
		{dbOnly, db.FileName, 0, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read or write the meta.db"},
		{foreignGroup, db.FileName, notTheWorkers, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read or write the meta.db"},
		{old, legacy.PiVersionName, 0, 0, "owned by uid 0, where the sessions root is uid 65534's, who may not read the pi-version"},
	}
	for _, b := range bad {
		must(t, os.Chown(path(b.key, b.name), 0, int(b.mode)))
		if b.mode != 0 {
			must(t, os.Chmod(path(b.key, b.name), 0o660))
		}
	}
	// Root's, but the worker's group may read and write it.
	must(t, os.Chown(path(byGroup, db.FileName), 0, worker))
	must(t, os.Chmod(path(byGroup, db.FileName), 0o660))

	for _, repair := range []bool{false, true} {
		found := checkFindings(t, s, CheckOptions{Repair: repair})
		owned := 0
		for _, f := range found {
			if f.Kind == KindOwner {
				owned++
			}
		}
		if owned != len(bad) {
			t.Errorf("repair %v: %d owner findings, want %d: %+v", repair, owned, len(bad), found)
		}
		for _, b := range bad {
			var f *Finding
			for i := range found {
				if found[i].Path == b.path() && found[i].Kind == KindOwner {
					f = &found[i]
				}
			}
			switch {
			case f == nil:
				t.Errorf("repair %v: %s: no owner finding", repair, b.path())
			case !strings.HasPrefix(f.Detail, b.detail) || f.Severity != SeverityProblem:
				t.Errorf("repair %v: %s: %s %q, want a problem %q", repair, b.path(), f.Severity, f.Detail, b.detail)
			case f.Repaired || !f.Remains:
				t.Errorf("repair %v: %s: %+v", repair, b.path(), f)
			case repair && !strings.HasPrefix(f.Repair, "left as is: check --repair gives no file away"):
				t.Errorf("--repair: %s: %q", b.path(), f.Repair)
			}
		}
	}
	for _, b := range bad {
		if uid, _ := uidOf(t, path(b.key, b.name)); uid != 0 {
			t.Errorf("%s after --repair: given to uid %d", b.path(), uid)
		}
	}
	// The operator's chown.
	givenToAWorker(t, root)
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Errorf("after the operator's chown: %+v", f)
		}
	}
}

// A store root owns judges neither owner nor mode: root may use
// anything. A key dir another user owns, one root owns with its owner's
// bits gone, are no finding there.
func TestCheckJudgesNothingInRootsOwnRoot(t *testing.T) {
	needRoot(t)
	s, root, _ := newTestStore(t, gates.Bounds{})
	others := runJobKey(t, s, "worker's")
	must(t, os.Chown(filepath.Join(root, others), worker, worker))
	must(t, os.Chmod(filepath.Join(root, others), 0o500))
	roots := runJobKey(t, s, "root's")
	must(t, os.Chmod(filepath.Join(root, roots, db.FileName), 0o400))
	must(t, os.Chmod(root, 0o500))
	t.Cleanup(func() { os.Chmod(root, 0o700); os.Chmod(filepath.Join(root, others), 0o700) })
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		t.Errorf("found %+v", f)
	}
}

// A sessions root whose mode lacks its owner's bits (0500, as an older
// sessdb made it under umask 0277) took every promotion of a new key from
// a worker that is not root while resolve said absent and check exit 0:
// check names it first (mode, path "."), and --repair gives the owner the
// bits, nothing else. An operator action looks at its key alone.
func TestCheckGivesTheRootItsOwnersBits(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := runJobKey(t, s, "any")
	givenToAWorker(t, root)
	must(t, os.Chmod(root, 0o550))
	t.Cleanup(func() { os.Chmod(root, 0o700) })
	for _, repair := range []bool{false, true} {
		found := checkFindings(t, s, CheckOptions{Repair: repair})
		if len(found) == 0 || found[0].Path != "." || found[0].Kind != KindMode || found[0].Key != "" {
			t.Fatalf("repair %v: the first finding is not the root's mode: %+v", repair, found)
		}
		f := found[0]
		switch {
		case !strings.HasPrefix(f.Detail, "mode 0550: its owner may not write the sessions root"):
			t.Errorf("repair %v: %q", repair, f.Detail)
		case !repair && (f.Repaired || !f.Remains):
			t.Errorf("check alone: %+v", f)
		case repair && (!f.Repaired || f.Remains || f.Repair != "gave its owner the bits it lacked: mode 0550, now 0750"):
			t.Errorf("--repair: %+v", f)
		}
		if len(found) != 1 {
			t.Errorf("repair %v: more than the root's mode: %+v", repair, found)
		}
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("root after --repair: %v, %v", fi.Mode().Perm(), err)
	}
	must(t, os.Chmod(root, 0o550))
	for _, f := range checkFindings(t, s, CheckOptions{Repair: true, Quarantine: key}) {
		if f.Path == "." {
			t.Errorf("an operator action judged the root: %+v", f)
		}
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o550 {
		t.Errorf("root after an operator action: %v, %v", fi.Mode().Perm(), err)
	}
}

// What a resolve run as root makes for a job in a dir a worker owns (the
// job dir, its session dir, the staged transcript, the ticket) is the
// worker's: a container run as the worker can write its transcript. In a
// dir root owns, all is root's, as before.
func TestWhatRootStagesInAWorkersDirIsTheWorkers(t *testing.T) {
	needRoot(t)
	s, _ := workersStore(t)
	key := runJobKey(t, s, "staged")
	for _, parentOwner := range []uint32{worker, 0} {
		parent := t.TempDir()
		must(t, os.Chown(parent, int(parentOwner), int(parentOwner)))
		jobDir := filepath.Join(parent, "job")
		sess, err := s.Resolve(key, localJob(), jobDir)
		if err != nil || !sess.Resume {
			t.Fatalf("resolve: %+v, %v", sess, err)
		}
		for _, name := range []string{"", StagedDirName, filepath.Join(StagedDirName, TranscriptName), TicketName} {
			if uid, gid := uidOf(t, filepath.Join(jobDir, name)); uid != parentOwner || gid != parentOwner {
				t.Errorf("job dir's parent %d's: %s owned by %d:%d", parentOwner, name, uid, gid)
			}
		}
	}
}

// An entry root owns that its access ACL lets the root's owner use (a
// key shared by `setfacl -m u:worker:rwx`) is no owner finding: the
// worker resumes it, and check said, from the mode bits alone, that it
// could not (ownrev3). The same entries without the ACL are. And one
// whose ACL names the owner with less than its others' bits give (a
// meta.db rw for others, r for the worker: the kernel refuses the
// worker's write) is one, where the mode bits alone passed it (ownrev4).
func TestCheckReadsTheACLOfAnEntryRootOwns(t *testing.T) {
	needRoot(t)
	s, root := workersStore(t)
	shared, bare, narrowed := runJobKey(t, s, "shared by an ACL"), runJobKey(t, s, "no ACL"), runJobKey(t, s, "narrowed by an ACL")
	// rights is an access ACL: root rw, the worker named with user, the
	// group nothing, the mask rwx, others other.
	rights := func(user, other uint32) []byte {
		return testfs.ACL([3]uint32{testfs.ACLUserObj, 6, testfs.ACLNoID}, [3]uint32{testfs.ACLUser, user, worker},
			[3]uint32{testfs.ACLGroupObj, 0, testfs.ACLNoID}, [3]uint32{testfs.ACLMask, 7, testfs.ACLNoID}, [3]uint32{testfs.ACLOther, other, testfs.ACLNoID})
	}
	setACL := func(p string, acl []byte) {
		t.Helper()
		if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
			t.Skipf("no access ACL on this file system (%v): not tested", err)
		}
	}
	for _, key := range []string{shared, bare} {
		for name, perm := range map[string]uint32{".": 7, db.FileName: 6, TranscriptName: 4} {
			p := filepath.Join(root, key, name)
			must(t, os.Chown(p, 0, 0))
			mode := os.FileMode(0o600)
			if name == "." {
				mode = 0o700
			}
			must(t, os.Chmod(p, mode))
			if key == shared {
				setACL(p, rights(perm, 0))
			}
		}
	}
	narrowedDB := filepath.Join(root, narrowed, db.FileName)
	must(t, os.Chown(narrowedDB, 0, 0))
	setACL(narrowedDB, rights(4, 6))
	owners := map[string]bool{}
	if _, err := s.Check(t.Context(), CheckOptions{}, func(f Finding) error {
		if f.Kind == KindOwner {
			owners[f.Path] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "/" + db.FileName, "/" + TranscriptName} {
		if owners[shared+name] {
			t.Errorf("%s%s: an owner finding, though its ACL gives the root's owner what the store needs", shared, name)
		}
		if !owners[bare+name] {
			t.Errorf("%s%s: no owner finding, though root owns it and nothing gives the root's owner what the store needs", bare, name)
		}
	}
	if !owners[narrowed+"/"+db.FileName] {
		t.Errorf("%s/%s: no owner finding, though its ACL gives the root's owner read only, where others have rw", narrowed, db.FileName)
	}
}
