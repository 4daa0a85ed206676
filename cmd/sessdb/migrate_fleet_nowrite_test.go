package main

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
)

// The fleet directions as the owner of the root and of the transcripts
// dir, where a run's writes are refused by a mode (a dir root made, 0755,
// or one chmod'ed by hand): --to etcd's write of a key's generation into
// its dir in the transcripts dir, and --from etcd's of a key dir in the
// root, failed the key, nothing written, exit 1; their dry runs planned
// "migrate", exit 0. Each dry run now fails the key as its run does.
func TestTheOwnersFleetDryRunsFailWhereTheRunsMayNotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make dirs root owns, and nobody to run the migrations as")
	}
	first, held := store.Key("github", "nowrite", "first"), store.Key("github", "nowrite", "held")
	_, tdir, runAs, root, s := nobodysRootBesideAFleet(t, first, "first 1")
	base := filepath.Dir(tdir)
	// The first move marks the transcripts dir as the fleet's.
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("the first move: exit %d\n%s\n%s", code, out, errs)
	}
	if res, err := promoteMarker(s, held, "held 1"); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	giveToNobody(root)
	// A dir at the key's name in the transcripts dir that root made.
	if err := os.Mkdir(filepath.Join(tdir, held), 0o755); err != nil {
		t.Fatal(err)
	}
	sameFailureInTheRunsWords(t, runAs, held, "--to etcd into a key's dir root made", "migrate", "--to", "etcd", root)
	if err := os.Remove(filepath.Join(tdir, held)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("the second move: exit %d\n%s\n%s", code, out, errs)
	}

	// Back into a new root whose key dir for one key root made.
	back := filepath.Join(base, "back")
	if err := os.Mkdir(back, 0o700); err != nil {
		t.Fatal(err)
	}
	giveToNobody(back)
	if err := os.Mkdir(filepath.Join(back, held), 0o755); err != nil {
		t.Fatal(err)
	}
	sameFailure(t, runAs, held, "--from etcd into a key dir root made", "permission denied", "migrate", "--from", "etcd", back)
	if names, err := os.ReadDir(filepath.Join(back, held)); err != nil || len(names) != 0 {
		t.Errorf("the key dir root made holds %v (%v); want nothing written", names, err)
	}
}

// --to etcd reads each key dir under meta.db's exclusive lock, opened for
// writing (a promotion in flight is rolled forward under it): a meta.db
// its runner may not write (0400: chmod'ed by hand) fails the key there,
// nothing moved, exit 1. The dry run reads under the shared lock, opened
// read-only, and planned "migrate", exit 0. It now fails the key as the
// run does.
func TestTheOwnersToEtcdDryRunFailsAMetaDBItMayNotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	key := store.Key("github", "nowrite", "meta")
	_, _, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	if err := os.Chmod(filepath.Join(root, key, "meta.db"), 0o400); err != nil {
		t.Fatal(err)
	}
	sameFailure(t, runAs, key, "--to etcd over a meta.db of mode 0400", "meta.db: permission denied", "migrate", "--to", "etcd", root)
}

// --from etcd opens each key dir's meta.db for writing under its
// exclusive lock before it judges the key: a key dir already at the
// fleet's generation whose meta.db its runner may not write (0400) fails
// there, exit 1. The dry run, under the shared lock, said "already",
// exit 0. It now fails the key as the run does.
func TestTheOwnersFromEtcdDryRunFailsAMetaDBItMayNotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	key := store.Key("github", "nowrite", "back")
	_, _, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
	}
	if err := os.Chmod(filepath.Join(root, key, "meta.db"), 0o400); err != nil {
		t.Fatal(err)
	}
	sameFailure(t, runAs, key, "--from etcd over a meta.db of mode 0400", "meta.db: permission denied", "migrate", "--from", "etcd", root)
}

// giveToNobody makes dir, and everything in it, nobody's.
func giveToNobody(dir string) {
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
}

// nobodysRootBesideAFleet is nobodysFleet, and a sessions root beside its
// transcripts dir (tdir) holding key promoted once (marker), all of it
// nobody's: the set-up of the tests of the migrations run as nobody.
func nobodysRootBesideAFleet(t *testing.T, key, marker string) (f *testFleet, tdir string, runAs func(args ...string) (int, string, string), root string, s *store.Store) {
	t.Helper()
	f, tdir, runAs = nobodysFleet(t)
	root = filepath.Join(filepath.Dir(tdir), "sessions")
	s, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := promoteMarker(s, key, marker); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	giveToNobody(root)
	return f, tdir, runAs, root, s
}
