package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// dirsNotRenamed is a disk that will not rename a directory, failing
// with errno from renameat2 and rename alike; files still rename. EXDEV
// is overlayfs's answer for a dir of a lower layer (a container image's)
// when it is not mounted with redirect_dir=on (seen on Linux 6.18: reap
// and check --quarantine of a key dir the lower layer held failed so);
// ENOSPC a btrfs's whose metadata is full, or a full xfs's, and EDQUOT a
// btrfs qgroup's at its limit (seen there too).
type dirsNotRenamed struct {
	durable.FS // every other call
	errno      unix.Errno
}

// roomless is the disk that refuses to rename a directory for want of
// room, and otherwise does what fs does.
func roomless(fs durable.FS) dirsNotRenamed { return dirsNotRenamed{fs, unix.ENOSPC} }

func (d dirsNotRenamed) refuses(dir *os.File, from, to string) error {
	if st, err := fsat.LstatAt(dir, from); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: d.errno}
	}
	return nil
}

func (d dirsNotRenamed) RenameNoReplace(dir *os.File, from, to string) error {
	if err := d.refuses(dir, from, to); err != nil {
		return err
	}
	return d.FS.RenameNoReplace(dir, from, to)
}

func (d dirsNotRenamed) Rename(dir *os.File, from, to string) error {
	if err := d.refuses(dir, from, to); err != nil {
		return err
	}
	return d.FS.Rename(dir, from, to)
}

// A reap of a key dir the file system will not rename fails with
// ErrDirNotMovable, whose message says why and what to do, and removes
// nothing; the key resolves as before. Each reap after fails the same,
// and records no second reaping entry: one per reap pushed the key's
// promotions and refusals out of its 64 history entries.
func TestAReapOfADirTheFileSystemWillNotMoveSaysWhyAndKeepsTheKey(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	clock.now = clock.now.Add(opsTTL + time.Hour)
	s.disk = diskWrites{dirsNotRenamed{durable.Disk{}, unix.EXDEV}}
	transcript := readCanonical(t, root, testKey)
	before := historyOf(t, root, testKey)
	for i := 1; i <= 3; i++ {
		res, err := s.Reap(false)
		if err != nil || len(res.Removed) != 0 || len(res.Failed) != 1 {
			t.Fatalf("reap %d: %+v, %v; want the key failed, nothing removed", i, res, err)
		}
		why := res.Skipped[testKey]
		if res.Failed[0] != testKey || !strings.Contains(why, unix.EXDEV.Error()+": "+ErrDirNotMovable.Error()) {
			t.Fatalf("reap %d failed with %q; want the EXDEV, then why and what to do (ErrDirNotMovable)", i, why)
		}
		if got := readCanonical(t, root, testKey); string(got) != string(transcript) {
			t.Fatalf("reap %d changed the transcript", i)
		}
		h := historyOf(t, root, testKey)
		if len(h) != len(before)+1 || h[len(h)-1].Outcome != reapingOutcome {
			t.Fatalf("reap %d: history %+v; want the one before plus one reaping entry", i, h)
		}
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Expired)

	// Where the file system renames it, the next reap removes the key.
	s.disk = diskWrites{}
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 || len(res.Failed) != 0 {
		t.Fatalf("reap on a disk that renames dirs: %+v, %v; want the key removed", res, err)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the key dir after the reap: %v; want it gone", err)
	}
}

// A quarantine the file system will not rename fails with
// ErrDirNotMovable and leaves the key dir as it found it: a legacy key
// keeps no meta.db (the one made for its lock goes again), and both keys
// resolve as before.
func TestAQuarantineOfADirTheFileSystemWillNotMoveLeavesTheKeyAsItWas(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{TTL: opsTTL})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	legacyKey := Key("github", "a/b", "legacy")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(time.Now(), "legacy")), "venue": "local"})
	s.disk = diskWrites{dirsNotRenamed{durable.Disk{}, unix.EXDEV}}
	for _, key := range []string{testKey, legacyKey} {
		entries := func() []string {
			names, err := fsat.ReadDirNames(openDirT(t, filepath.Join(root, key)))
			if err != nil {
				t.Fatal(err)
			}
			return sortedCopy(names)
		}
		namesBefore := strings.Join(entries(), " ")
		aside, err := s.Quarantine(key)
		if aside != "" || !errors.Is(err, ErrDirNotMovable) || !strings.Contains(err.Error(), "quarantine "+key) {
			t.Fatalf("quarantine of %s: %q, %v; want ErrDirNotMovable naming the key", key, aside, err)
		}
		if got := strings.Join(entries(), " "); got != namesBefore {
			t.Fatalf("%s after the quarantine that failed holds %q; want %q", key, got, namesBefore)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, legacyKey, db.FileName)); !os.IsNotExist(err) {
		t.Fatalf("the legacy key's lock meta.db stayed: %v", err)
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}
