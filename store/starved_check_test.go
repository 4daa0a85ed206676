// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package store

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// A meta.db temp that check cannot open (no descriptor left) may be a
// meta.db its creator holds right now: whether it is stray is not known,
// and check says why instead (unreadable, a fault). FlockedNow (then
// store's flockedNow) took a file it could not open for one nobody holds,
// and check reported the creation in flight as a stray-temp problem (exit
// 3), as --repair's removal (removeTemps) does not: it leaves such a temp.
func TestMetaDBTempNotOpenedForWantOfADescriptorIsNotStray(t *testing.T) {
	_, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi})
	name := db.TempPrefix + "0123456789abcdef"
	f, err := os.OpenFile(filepath.Join(root, testKey, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	var held bool
	testfs.Starved(t, func() { held, err = fsat.FlockedNow(kd, name) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("fsat.FlockedNow with no descriptor to open the temp = %v, %v; want EMFILE", held, err)
	}
	if held, err := fsat.FlockedNow(kd, name); !held || err != nil {
		t.Fatalf("fsat.FlockedNow of the temp its creator holds = %v, %v; want true", held, err)
	}
	if _, err := fsat.FlockedNow(kd, db.TempPrefix+"gone"); !fsat.IsNotExist(err) {
		t.Fatalf("fsat.FlockedNow of a temp gone since the listing: %v; want not-exist", err)
	}
}

// A promotion onto a meta.db whose newest meta page a power cut tore, and
// whose older commit describes the transcript in place, goes on; with no
// descriptor left to read that transcript, nothing is told apart, and the
// promotion fails with the open's error. fellBack took the unread file for
// one the older commit does not describe, and the promotion failed with
// ErrMetaFellBack's "the key lost its last commit", which sends an
// operator to check for damage the key does not have.
func TestFellBackWithoutADescriptorIsTheOpensError(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	one := readCanonical(t, root, testKey)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	path := filepath.Join(root, testKey, db.FileName)
	damageNewestMetaPage(t, path)
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), one, 0o600); err != nil { // the rename never happened
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, TranscriptName)
	if err != nil {
		t.Fatal(err)
	}
	cur := keyState{file: &st, record: &db.Transcript{Gen: 1, Size: int64(len(one)), CRC32C: uint64(crc32.Checksum(one, castagnoli))}}
	m := metaPagesOf(t, path)
	var fell bool
	testfs.Starved(t, func() { fell, err = fellBack(context.Background(), kd, m, cur) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("fellBack with no descriptor to read the transcript = %v, %v; want EMFILE", fell, err)
	}
	if fell, err := fellBack(context.Background(), kd, m, cur); fell || err != nil {
		t.Fatalf("fellBack over a commit torn by a power cut = %v, %v; want false", fell, err)
	}
}

// A key dir whose listing fails (here for want of a descriptor) cannot
// say which legacy files it holds: dump and stats report the key as one
// they could not read (dump exits 1). legacyFiles read the failure as
// "none": a mixed key (legacy files beside meta.db) was reported as a db
// key with no legacy files, and a legacy key without a transcript as
// empty, exit 0.
func TestLegacyFilesThatCannotBeListedIsAFault(t *testing.T) {
	_, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi, "venue": "local"})
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	k := &keyDir{dir: kd}
	defer kd.Close()
	var names []string
	testfs.Starved(t, func() { names, err = legacyFiles(k) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("legacyFiles with no descriptor to list the dir = %q, %v; want EMFILE", names, err)
	}
	if names, err := legacyFiles(k); err != nil || len(names) != 2 {
		t.Fatalf("legacyFiles = %q, %v; want pi-version and venue", names, err)
	}
}

// A key a crash left with a committed promotion whose temp was lost holds
// the generation before it where that is in place: heldRecord reads the
// transcript in place to tell. That read failing (no descriptor left, an
// I/O error) says nothing of it: it is heldRecord's error. It was taken
// for "not the generation before": the record's generation, never in
// place, was the key's base, for a writer's Begin (the lost promotion's
// retry then a repeat of a promotion whose bytes are gone) and a
// resolve's cold start alike.
func TestHeldRecordWithoutADescriptorIsTheOpensError(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("lost")...))
	loseTemp["gone"](crashAfterCommit(t, s, root, sess))
	sc := sidecarsOf(t, root, testKey)
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, TranscriptName)
	if err != nil {
		t.Fatal(err)
	}
	var held *db.Transcript
	testfs.Starved(t, func() { held, err = heldRecord(context.Background(), kd, sc, &st) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("heldRecord with no descriptor to read the transcript in place = %+v, %v; want EMFILE", held, err)
	}
	if held, err := heldRecord(context.Background(), kd, sc, &st); err != nil || held == nil || held.Gen != 1 {
		t.Fatalf("heldRecord of a lost promotion = %+v, %v; want gen 1, the generation in place", held, err)
	}
}

// lockHeldNow, a look's question whether a writer may hold a key's lock
// (its meta.db's flock) now: not where no meta.db is there, nor a link or
// a FIFO at its name (nothing a writer locks), nor a free flock; yes
// where a writer holds it, and where it cannot be told because the open
// failed for want of a descriptor: taken for no writer, a live
// promotion's temp would be judged, and reported stray (§5z: that mutant
// survived, untested).
func TestLockHeldNowTellsAWriterFromNone(t *testing.T) {
	dir := t.TempDir()
	kd := openDirT(t, dir)
	path := filepath.Join(dir, db.FileName)
	if lockHeldNow(kd) {
		t.Error("lockHeldNow with no meta.db = true; want false")
	}
	if err := os.Symlink("elsewhere", path); err != nil {
		t.Fatal(err)
	}
	if lockHeldNow(kd) {
		t.Error("lockHeldNow of a link = true; want false")
	}
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if lockHeldNow(kd) {
		t.Error("lockHeldNow of a FIFO = true; want false")
	}
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if lockHeldNow(kd) {
		t.Error("lockHeldNow of a meta.db whose flock is free = true; want false")
	}
	var held bool
	testfs.Starved(t, func() { held = lockHeldNow(kd) })
	if !held {
		t.Error("lockHeldNow with no descriptor to open meta.db = false; want true (not known)")
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if !lockHeldNow(kd) {
		t.Error("lockHeldNow of a meta.db a writer holds = false; want true")
	}
}
