package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sessdb/db"
)

// worker is the user a sessions root belongs to in these tests: nobody.
const worker = 65534

// A legacy sidecar the sessions root's owner may not read (root's 0600,
// or its own with no read bit) is read by that owner's workers as no
// value: a venue or pi-version so cold-starts the key (venue-changed),
// and the owner's own migration fails the key on the read. Root reads it
// all the same: root's migration in a worker's root carried its value,
// and the key the worker cold-started resumed after it (measured by hand:
// the worker's resolve venue-changed before, resumed after). It now fails
// the key as the worker's migration does, in a dry run too, leaving its
// files; one the owner may read (root's 0644) is migrated.
func TestRootsMigrationOfASidecarTheRootsOwnerMayNotReadFailsTheKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root reads what the root's owner may not: run as root to test it")
	}
	for name, c := range map[string]struct {
		uid  int
		mode os.FileMode
		fail bool
	}{
		"root's, 0600":  {0, 0o600, true},
		"its own, 0200": {worker, 0o200, true},
		"root's, 0644":  {0, 0o644, false},
		"its own, 0600": {worker, 0o600, false},
	} {
		t.Run(name, func(t *testing.T) {
			root, key := oneKey(t)
			giveToWorker(t, root)
			venue := filepath.Join(root, key, "venue")
			must(t, os.Chown(venue, c.uid, c.uid))
			must(t, os.Chmod(venue, c.mode))
			for _, dry := range []bool{true, false} {
				got, _ := migrate(t, root, false, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
				r := got[key]
				switch {
				case c.fail && (r.Action != Failed || !strings.Contains(r.Cause, venue) || !strings.Contains(r.Cause, "may not read it")):
					t.Errorf("dry run %v: %s %q; want failed, naming %s, which the root's owner may not read", dry, r.Action, r.Cause, venue)
				case !c.fail && r.Action != Migrated:
					t.Errorf("dry run %v: %s %q; want migrate", dry, r.Action, r.Cause)
				}
			}
			if _, err := os.Lstat(venue); c.fail && err != nil {
				t.Errorf("the failed key's venue: %v; want it kept", err)
			}
		})
	}
}

// A legacy key dir root owns in a worker's root (a legacy worker run as
// root once: 0755, its files 0644) is one the worker's resolves read and
// resume. Root's migration made its meta.db root's (what root makes is the
// dir's owner's), 0600, and every resolve of the key by the worker then
// failed (by hand: nobody's resolve resumed before, exited 1 after,
// "permission denied"). It now fails the key, in a dry run too, and
// changes nothing in it; once the key dir is the worker's, it migrates.
func TestRootsMigrationOfAKeyDirRootOwnsInAWorkersRootFailsTheKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root makes a key dir root owns in a worker's root: run as root to test it")
	}
	root, key, dir := rootOwnedKeyDir(t, 0o755)
	failsChangingNothing(t, root, key, "a key dir root owns")
	giveToWorker(t, dir)
	if got, _ := migrate(t, root, false, testOpts()); got[key].Action != Migrated {
		t.Errorf("once the key dir is the worker's: %+v", got[key])
	}
	if uid, _ := ownerOf(t, filepath.Join(dir, "meta.db")); uid != worker {
		t.Errorf("meta.db is uid %d's, want the worker's", uid)
	}
}

func ownerOf(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// The same under an empty meta.db (a migration, or a first promotion,
// killed before its commit, left it beside the legacy files: the legacy
// files are still the key's values): root's migration reads the sidecars
// under meta.db's lock, and fails the key on one the root's owner may not
// read as it does without the empty meta.db, in a dry run too.
func TestRootsMigrationUnderAnEmptyMetaDBOfASidecarTheRootsOwnerMayNotReadFailsTheKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root reads what the root's owner may not: run as root to test it")
	}
	root, key := oneKey(t)
	withDB(t, filepath.Join(root, key), func(*db.DB) {})
	giveToWorker(t, root)
	venue := filepath.Join(root, key, "venue")
	must(t, os.Chown(venue, 0, 0))
	must(t, os.Chmod(venue, 0o600))
	for _, dry := range []bool{true, false} {
		got, _ := migrate(t, root, false, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
		if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, venue) || !strings.Contains(r.Cause, "may not read it") {
			t.Errorf("dry run %v: %s %q; want failed, naming %s, which the root's owner may not read", dry, r.Action, r.Cause, venue)
		}
	}
	if _, err := os.Lstat(venue); err != nil {
		t.Errorf("the failed key's venue: %v; want it kept", err)
	}
}

// A sidecar name that holds no file (here a directory root owns, 0700,
// which the root's owner may not list) is no value the owner's workers
// read, nor one its own migration reads: root's migration takes it so
// too (no value, an oddity) and migrates the key, as for a directory the
// owner may read. The read judgement is of files the migration reads.
func TestRootsMigrationOfADirectoryAtASidecarNameRootOwnsMigratesTheKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root makes a sidecar name root owns in a worker's root: run as root to test it")
	}
	root, key := oneKey(t)
	giveToWorker(t, root)
	venue := filepath.Join(root, key, "venue")
	must(t, os.Remove(venue))
	must(t, os.MkdirAll(filepath.Join(venue, "inside"), 0o700))
	for _, dry := range []bool{true, false} {
		got, _ := migrate(t, root, false, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
		if r := got[key]; r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "(pending)" {
			t.Errorf("dry run %v: %s %q; want migrated, the venue read as none", dry, r.Action, r.Cause)
		}
	}
}

// The same key dir made 0777 (a legacy worker run as root under umask 0):
// the root's owner may write in it, and its own migration makes meta.db
// its own there; root's still made meta.db root's, 0600, which the
// owner's resolves cannot open. Root's migration fails it, as the 0755
// one, saying it was migrated as root, in a dry run too.
func TestRootsMigrationOfAKeyDirRootOwnsThatTheRootsOwnerMayWriteInFailsTheKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root makes a key dir root owns in a worker's root: run as root to test it")
	}
	root, key, _ := rootOwnedKeyDir(t, 0o777)
	failsChangingNothing(t, root, key, "migrated as root")
}

// A sidecar the root's owner may not read, left beside a meta.db that
// holds the key's values (a legacy worker came back after the migration),
// is a leftover: no value of it is read or carried, so root's migration
// removes it as any leftover (Already), in a dry run too, and does not
// fail the key as it fails one whose values are still the legacy files.
func TestRootsMigrationRemovesALeftoverSidecarTheRootsOwnerMayNotRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root reads what the root's owner may not: run as root to test it")
	}
	root, key := oneKey(t)
	giveToWorker(t, root)
	if got, _ := migrate(t, root, false, testOpts()); got[key].Action != Migrated {
		t.Fatalf("the first migration: %+v", got[key])
	}
	venue := filepath.Join(root, key, "venue")
	must(t, os.WriteFile(venue, []byte("elsewhere"), 0o600)) // root's
	for _, dry := range []bool{true, false} {
		got, _ := migrate(t, root, false, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
		if r := got[key]; r.Action != Already || !slices.Contains(r.Removed, "venue") {
			t.Errorf("dry run %v: %s %q, removed %v; want already, the leftover venue removed", dry, r.Action, r.Cause, r.Removed)
		}
	}
	if _, err := os.Lstat(venue); !os.IsNotExist(err) {
		t.Errorf("the leftover venue after the run: %v; want it removed", err)
	}
}

// rootOwnedKeyDir is oneKey's key dir in a worker's root as a legacy
// worker run as root left it: root's, mode, its files 0644.
func rootOwnedKeyDir(t *testing.T, mode os.FileMode) (root, key, dir string) {
	root, key = oneKey(t)
	must(t, os.Chown(root, worker, worker))
	dir = filepath.Join(root, key)
	must(t, os.Chmod(dir, mode))
	names, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range names {
		must(t, os.Chmod(filepath.Join(dir, e.Name()), 0o644))
	}
	return root, key, dir
}

// failsChangingNothing runs root's migration to meta.db, dry and then not,
// and wants key failed, its cause naming the key dir and saying why, and
// nothing in the root changed.
func failsChangingNothing(t *testing.T, root, key, why string) {
	t.Helper()
	dir := filepath.Join(root, key)
	before := treeState(t, root, true, true)
	for _, dry := range []bool{true, false} {
		got, _ := migrate(t, root, false, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
		if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, dir) || !strings.Contains(r.Cause, why) {
			t.Errorf("dry run %v: %s %q; want failed, naming the key dir and saying %q", dry, r.Action, r.Cause, why)
		}
	}
	if d := diffStates(before, treeState(t, root, true, true)); d != "" {
		t.Errorf("the failed migration changed the root:\n%s", d)
	}
}

// giveToWorker gives path and everything under it to the worker, as the
// root's owner made them.
func giveToWorker(t *testing.T, path string) {
	t.Helper()
	must(t, filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, worker, worker)
	}))
}
