package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A migration's run opens the key's meta.db for writing, and a writer
// gives a meta.db with more than one name (a hard link: a copy of the
// root made with cp -al) a file of its own first, a copy made in the key
// dir: in a key dir its runner may not write in (0500), that copy is
// refused and the run fails the key, whatever it would have judged it.
// Its dry run fails it alike, in the run's words. Before, the fleet
// migrations' dry runs asked only meta.db's own mode (MayOpenMetaDB) on
// these paths: --to etcd planned the key migrated, and --from etcd into
// a key already at the fleet's generation planned it already, exit 0,
// where each run failed it, exit 1.
func TestAFleetMigrationsDryRunFailsAHardLinkedMetaDBInAKeyDirItMayNotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	for _, dir := range []string{"--to", "--from"} {
		t.Run(dir, func(t *testing.T) {
			key := store.Key("github", "hardlink-nowrite", dir)
			_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
			if dir == "--from" {
				if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
					t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
				}
			}
			kd := filepath.Join(root, key)
			if err := os.Link(filepath.Join(kd, "meta.db"), filepath.Join(filepath.Dir(tdir), "meta.db.link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(kd, 0o500); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(kd, 0o700)
			hardLinkedSameFailure(t, "permission denied", runAs, root, key, "migrate", dir, "etcd", root)
		})
	}
}

// hardLinkedSameFailure runs argv's dry run and then its run over root,
// as runAs's user: the run must fail key on the copy a writer makes of a
// hard-linked meta.db (its cause ending in errno's words), and the dry run
// fail it with the same exit and the run's cause (a temp's random part as
// "<random>"), the root unchanged by it.
func hardLinkedSameFailure(t *testing.T, errno string, runAs func(args ...string) (int, string, string), root, key string, argv ...string) {
	t.Helper()
	before := tree(t, root)
	dcode, dout, derrs := runAs(append([]string{argv[0], "--dry-run"}, argv[1:]...)...)
	if tree(t, root) != before {
		t.Error("the dry run changed the root")
	}
	code, out, errs := runAs(argv...)
	cause := runsCause(failedKeyLine(out, key))
	if code != exitFault || !strings.Contains(cause, errno) {
		t.Fatalf("run: exit %d, %q; want 1, the key failed on meta.db's copy\nstdout:\n%s\nstderr:\n%s", code, cause, out, errs)
	}
	want := tmpRandom.ReplaceAllString(cause, "${1}<random>")
	if dline := failedKeyLine(dout, key); dcode != code || !strings.Contains(dline, want) {
		t.Errorf("dry run: exit %d, %q; want exit %d and the run's words, %q\nstdout:\n%s\nstderr:\n%s", dcode, dline, code, want, dout, derrs)
	}
}

// The local rollback too: --to-legacy over a meta.db key, its run opening
// meta.db as a writer first, in a key dir of mode 0500 whose meta.db has
// a second name. Before, its dry run asked the key dir first and said
// the look's "access <dir>", where the run said "copy <dir>/meta.db".
// (migrate to meta.db over a key already there takes no writer: both say
// already.)
func TestAMigrationsDryRunFailsAHardLinkedMetaDBInAKeyDirItMayNotWrite(t *testing.T) {
	for _, argv := range [][]string{{"migrate", "--to-legacy"}} {
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			w := newNobodysWorker(t)
			if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
				t.Fatalf("promote: %s", promoted)
			}
			kd := filepath.Join(w.root, workerKey)
			if err := os.Link(filepath.Join(kd, "meta.db"), filepath.Join(w.base, "meta.db.link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(kd, 0o500); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(kd, 0o700)
			hardLinkedSameFailure(t, "permission denied", w.runAs, w.root, workerKey, append(argv, w.root)...)
		})
	}
}

// A hard-linked meta.db another user owns (root's, in nobody's group,
// 0660: nobody may open it for writing), migrated by nobody: a writer's
// open gives the file a copy of its own, owned as meta.db is, and nobody
// may not give its copy root's uid (chown: operation not permitted), so
// the run fails the key. Its dry run fails it alike, in the run's words.
// Before, the dry runs asked only whether nobody may write meta.db and
// the key dir: each planned the key (migrated, or already on the way
// back) and exited 0, where the run failed it, exit 1.
func TestAMigrationsDryRunFailsAHardLinkedMetaDBOfAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody and give meta.db to root")
	}
	otherOwner := func(t *testing.T, kd, linkDir string) {
		t.Helper()
		if err := os.Link(filepath.Join(kd, "meta.db"), filepath.Join(linkDir, "meta.db.link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(kd, "meta.db"), 0, nobody); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(kd, "meta.db"), 0o660); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"--to", "--from"} {
		t.Run("fleet "+dir, func(t *testing.T) {
			key := store.Key("github", "hardlink-owner", dir)
			_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
			if dir == "--from" {
				if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
					t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
				}
			}
			otherOwner(t, filepath.Join(root, key), filepath.Dir(tdir))
			hardLinkedSameFailure(t, "operation not permitted", runAs, root, key, "migrate", dir, "etcd", root)
		})
	}
	t.Run("--to-legacy", func(t *testing.T) {
		w := newNobodysWorker(t)
		if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
			t.Fatalf("promote: %s", promoted)
		}
		otherOwner(t, filepath.Join(w.root, workerKey), w.base)
		hardLinkedSameFailure(t, "operation not permitted", w.runAs, w.root, workerKey, "migrate", "--to-legacy", w.root)
	})
	// nobody's own meta.db in a group nobody is not in (root's): its
	// owner may not give its copy that group either.
	t.Run("--to-legacy group", func(t *testing.T) {
		w := newNobodysWorker(t)
		if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
			t.Fatalf("promote: %s", promoted)
		}
		kd := filepath.Join(w.root, workerKey)
		if err := os.Link(filepath.Join(kd, "meta.db"), filepath.Join(w.base, "meta.db.link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(kd, "meta.db"), nobody, 0); err != nil {
			t.Fatal(err)
		}
		hardLinkedSameFailure(t, "operation not permitted", w.runAs, w.root, workerKey, "migrate", "--to-legacy", w.root)
	})
}
