package main

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
)

// A migration whose run is refused its first write in a key dir its
// runner may not write in (0500) fails the key there, and its dry run
// fails it alike, in the run's words, its temp's random part as
// "<random>". Before, three dry runs said the look's "access <dir>"
// where the runs said:
//   - migrate (to meta.db) of a legacy key dir, and --from etcd into a key
//     dir with no meta.db: "create <dir>/meta.db: .meta.db.tmp-<hex>"
//     (db's create of meta.db through a temp);
//   - --to-legacy: "open <dir>/pi-version.incoming" (the first legacy
//     file's temp).
func TestAMigrationsDryRunSaysTheRunsFirstWriteInAKeyDirItMayNotWrite(t *testing.T) {
	for _, argv := range [][]string{{"migrate", "--to-legacy"}, {"migrate"}} {
		t.Run(argv[len(argv)-1], func(t *testing.T) {
			w := newNobodysWorker(t)
			w.job("job-1")
			if len(argv) == 1 {
				if code, out, errs := w.runAs("migrate", "--to-legacy", w.root); code != exitOK {
					t.Fatalf("to legacy: exit %d\n%s\n%s", code, out, errs)
				}
			}
			kd := filepath.Join(w.root, workerKey)
			if err := os.Chmod(kd, 0o500); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(kd, 0o700)
			before := tree(t, w.root)
			sameFailureInTheRunsWords(t, w.runAs, workerKey, argv[len(argv)-1], append(argv, w.root)...)
			if tree(t, w.root) != before {
				t.Error("the dry run and the run changed the root")
			}
		})
	}
	t.Run("--from etcd", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run the migration as nobody, whom a mode binds")
		}
		key := store.Key("github", "drywords", "no meta.db")
		_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
		if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
			t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
		}
		back := filepath.Join(filepath.Dir(tdir), "back")
		kd := filepath.Join(back, key)
		if err := os.MkdirAll(kd, 0o700); err != nil {
			t.Fatal(err)
		}
		giveToNobody(back)
		if err := os.Chmod(kd, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(kd, 0o700)
		sameFailureInTheRunsWords(t, runAs, key, "--from etcd into a key dir with no meta.db", "migrate", "--from", "etcd", back)
	})
}
