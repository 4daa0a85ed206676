package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/faults"
	"sessdb/store"
)

// A migration of a key dir holding a promotion in flight (committed, not
// renamed: a worker killed between the two) rolls it forward before it
// judges the key: a rename of the temp over current.jsonl, or, of a
// damaged temp, its removal, in the key dir. Run as nobody in a key dir
// of mode 0500, that write is refused and the run fails the key, exit 1
// (a damaged temp's removal unreported, as "a pending promotion was not
// settled"); its dry run fails it alike, in the run's words. Before, the dry run
// asked nothing of the key dir there: --from etcd's planned the key it
// would judge after the roll-forward (a conflict, where the fleet has an
// older generation), exit 1 but no failure named, and the plan of a key
// with no generation to copy (64d0642) a migration, exit 0.
func TestADryRunOverAPromotionInFlightAsksTheRollForwardsWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	for _, c := range []struct {
		name    string
		to      bool // --to etcd, else --from etcd after a --to
		damaged bool // the temp truncated: the roll-forward removes it
	}{
		{"from etcd, a whole temp", false, false},
		{"from etcd, a damaged temp", false, true},
		{"to etcd, a whole temp", true, false},
		{"to etcd, a damaged temp", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := store.Key("github", "nowrite", "in-flight")
			_, _, runAs, root, s := nobodysRootBesideAFleet(t, key, "1")
			if !c.to {
				if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
					t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
				}
			}
			faults.Set(func(p faults.Point) error {
				if p == faults.PromoteAfterCommit {
					return errors.New("killed after the commit")
				}
				return nil
			})
			_, err := promoteMarker(s, key, "2")
			faults.Set(nil)
			if err == nil {
				t.Fatal("the promotion did not stop after its commit")
			}
			kd := filepath.Join(root, key)
			if c.damaged {
				names, _ := filepath.Glob(filepath.Join(kd, "."+store.TranscriptName+".tmp-*"))
				if len(names) != 1 {
					t.Fatalf("the promotion's temps: %v; want one", names)
				}
				if err := os.Truncate(names[0], 10); err != nil {
					t.Fatal(err)
				}
			}
			giveToNobody(root)
			if err := os.Chmod(kd, 0o500); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(kd, 0o700) // for the cleanup
			dir := "--from"
			if c.to {
				dir = "--to"
			}
			argv := []string{"migrate", dir, "etcd", root}
			dcode, dout, derrs := runAs(append([]string{argv[0], "--dry-run"}, argv[1:]...)...)
			code, out, errs := runAs(argv...)
			cause := runsCause(failedKeyLine(out, key))
			if code != exitFault || cause == "" {
				t.Fatalf("the run: exit %d\n%s\n%s; want the key failed", code, out, errs)
			}
			if dcause := runsCause(failedKeyLine(dout, key)); dcode != code || dcause != cause {
				t.Errorf("the dry run: exit %d, %q\n%s\n%s\nwant exit %d and the run's words, %q", dcode, dcause, dout, derrs, code, cause)
			}
		})
	}
}
