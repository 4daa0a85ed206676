package db

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The copy keeps the file's owner as well as its permission bits: root's
// check --repair on a worker's key (an operator auditing a worker's root
// as root is normal) made a hard-linked meta.db root's, 0600, and locked
// the worker out of its own key.
func TestAHardLinkedMetaDBsCopyKeepsItsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give meta.db another owner")
	}
	kd := makeDB(t, 0)
	const uid, gid = 4242, 4343
	if err := os.Chown(kd.db, uid, gid); err != nil {
		t.Fatal(err)
	}
	backup := hardLink(t, kd)
	putVenue(t, kd, "elsewhere")
	live := lstat(t, kd.db)
	if live.Ino == lstat(t, backup).Ino {
		t.Fatal("meta.db was not copied")
	}
	if live.Uid != uid || live.Gid != gid {
		t.Errorf("meta.db's copy is owned by %d:%d, want the old file's %d:%d", live.Uid, live.Gid, uid, gid)
	}
	if perm := live.Mode & 0o777; perm != 0o600 {
		t.Errorf("meta.db's copy has mode %#o, want 0600", perm)
	}
}

// A writer that may not give the copy the file's owner (neither root nor
// the owner, as a user the file's mode lets write) fails before anything
// changes: meta.db keeps both its names, no temp is left, and the other
// name's file is not written. Its error says why a writer copies at all.
func TestAWriterThatCannotKeepTheOwnerCopiesNothing(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		cannotKeepTheOwner(t)
		return
	}
	writerCopiesNothing(t, 4242, 4343, 4343)
}

// So does the owner itself when the file's group is one it is not in (a
// root that chowned the tree to worker:shared, the worker not in shared):
// the copy, made in the writer's own group, could not be given the
// file's. The doc said only a writer neither root nor the owner failed,
// and the error, "chown ... to meta.db's owner 4242:4343", named the
// writer's own uid as the owner it could not give.
func TestAnOwnerOutsideTheFilesGroupCopiesNothing(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		cannotKeepTheOwner(t)
		return
	}
	writerCopiesNothing(t, 4242, 4242, 4343)
}

// cannotKeepTheOwner is the child's side: fd 3 is the key dir, opened by
// the parent; this process runs as a user who may write meta.db but not
// give a file its owner and group.
func cannotKeepTheOwner(t *testing.T) {
	kd := keyDir{dir: os.NewFile(3, "keydir"), path: "keydir", db: "keydir/" + FileName}
	_, err := OpenWriter(kd.dir, kd.db, testOpts)
	wantErr(t, err, unix.EPERM)
	if err != nil && !strings.Contains(err.Error(), "2 names (a hard link)") {
		t.Errorf("the error does not say why the writer copies meta.db: %v", err)
	}
}

// writerCopiesNothing runs the calling test's child as uid writer (its
// group the same number, and no other), owner of the key dir, on a 0666
// hard-linked meta.db of owner:group, and checks that nothing changed.
func writerCopiesNothing(t *testing.T, writer, owner, group int) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a writer as another user")
	}
	kd := makeDB(t, 0)
	if err := os.Chown(kd.path, writer, writer); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(kd.db, owner, group); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(kd.db, 0o666); err != nil {
		t.Fatal(err)
	}
	backup := hardLink(t, kd)
	was, state := readFile(t, backup), dirState(t, kd)
	// The test binary, where the other user can run it.
	bin, err := os.MkdirTemp("", "sessdb-db-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bin)
	exe := filepath.Join(bin, "db.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name(), "GORACE=atexit_sleep_ms=0", "TMPDIR="+bin)
	cmd.ExtraFiles = []*os.File{kd.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(writer), Gid: uint32(writer), NoSetGroups: true}}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("writer as uid %d: %v\n%s", writer, err, out)
	}
	if now := dirState(t, kd); now != state {
		t.Errorf("the key dir changed:\n%s\nwant:\n%s", now, state)
	}
	if live := lstat(t, kd.db); live.Ino != lstat(t, backup).Ino || live.Nlink != 2 || live.Uid != uint32(owner) || live.Gid != uint32(group) {
		t.Errorf("meta.db is no longer the linked file of %d:%d", owner, group)
	}
	if !bytes.Equal(readFile(t, backup), was) {
		t.Error("the other name's file changed")
	}
}
