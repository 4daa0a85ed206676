package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// --from etcd of a record with no transcript into a key dir holding an
// empty meta.db (a lock's: a first promotion, or a migration, killed
// before its commit) writes only meta.db, in place, under its lock: a key
// dir its runner may not make entries in (0500: a umask, or chmod'ed by
// hand) takes it, the key migrated, exit 0, as long as meta.db is the
// runner's to write. The dry run asked of the key dir what the run asks
// of a generation's temp, the right to make entries in it, and failed the
// key ("a run may not write in the key dir"), exit 1: a plan that said
// the run would fail where it succeeds. It now plans what the run does,
// and fails the key still where meta.db has a second name (a hard link),
// which the run's open copies into a file of its own in the key dir.
func TestAFromEtcdDryRunOfARecordWithNoTranscriptPlansTheRunsMetaDBWriteOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	key := store.Key("github", "nowrite", "no-transcript")
	_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	// The record the fleet gets names no transcript: the key dir's is gone.
	if err := os.Remove(filepath.Join(root, key, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
	}
	back := filepath.Join(filepath.Dir(tdir), "back")
	kd := filepath.Join(back, key)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := fsat.OpenDir(kd)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := db.OpenWriter(d, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	d.Close()
	giveToNobody(back)
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(kd, 0o700) // for the cleanup
	// A meta.db with a second name (a hard link) the run's open first
	// copies into a file of its own in the key dir, which it may not
	// make: both fail the key, exit 1, in the run's words ("copy
	// <dir>/meta.db").
	other := filepath.Join(filepath.Dir(tdir), "meta.db-link")
	if err := os.Link(filepath.Join(kd, db.FileName), other); err != nil {
		t.Fatal(err)
	}
	hardLinkedSameFailure(t, "permission denied", runAs, back, key, "migrate", "--from", "etcd", back)
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	before := tree(t, back)
	dcode, dout, derrs := runAs("migrate", "--from", "etcd", "--dry-run", back)
	if tree(t, back) != before {
		t.Error("the dry run changed the root")
	}
	code, out, errs := runAs("migrate", "--from", "etcd", back)
	if code != exitOK || !strings.Contains(out, key+"  migrate ") {
		t.Fatalf("the run: exit %d; want 0, the key migrated (meta.db written in place)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if dcode != code || !strings.Contains(dout, key+"  migrate ") {
		t.Errorf("the dry run: exit %d; want %d, the key migrated, as the run did\nstdout:\n%s\nstderr:\n%s\nthe run's:\n%s", dcode, code, dout, derrs, out)
	}
	if names, err := os.ReadDir(kd); err != nil || len(names) != 1 || names[0].Name() != db.FileName {
		t.Errorf("the key dir after the run: %v (%v); want meta.db alone", names, err)
	}
}
