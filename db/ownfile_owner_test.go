package db

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

const ownerFailEnv = "SESSDB_DB_TEST_OWNER_FAIL"

// A writer that may not give the copy the file's owner (neither root nor
// the owner, as a user the file's mode lets write) fails before anything
// changes: meta.db keeps both its names, no temp is left, and the other
// name's file is not written.
func TestAWriterThatCannotKeepTheOwnerCopiesNothing(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		// fd 3: the key dir, opened by the parent; this process runs as
		// a user who owns the key dir but not meta.db.
		kd := keyDir{dir: os.NewFile(3, "keydir"), path: "keydir", db: "keydir/" + FileName}
		_, err := OpenWriter(kd.dir, kd.db, testOpts)
		wantErr(t, err, unix.EPERM)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a writer as another user")
	}
	kd := makeDB(t, 0)
	const writer, owner = 4242, 4343
	if err := os.Chown(kd.path, writer, writer); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(kd.db, owner, owner); err != nil {
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: writer, Gid: writer, NoSetGroups: true}}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("writer as uid %d: %v\n%s", writer, err, out)
	}
	if now := dirState(t, kd); now != state {
		t.Errorf("the key dir changed:\n%s\nwant:\n%s", now, state)
	}
	if live := lstat(t, kd.db); live.Ino != lstat(t, backup).Ino || live.Nlink != 2 || live.Uid != owner {
		t.Errorf("meta.db is no longer the linked file of uid %d", owner)
	}
	if !bytes.Equal(readFile(t, backup), was) {
		t.Error("the other name's file changed")
	}
}
