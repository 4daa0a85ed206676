package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A reap finishing a reap-owned dir that lacks its owner's write bit (an
// older sessdb's 0500 dir, a 0400 meta.db) gives the bit to what its look
// found, and to nothing swapped in at the name between that look and the
// give (a worker of the same user, or the runner's own hand): a regular
// file at the dir's name, or at meta.db's a second name of a file
// elsewhere, keeps its mode. Before, the give took any directory or
// regular file its runner owned: the swapped-in file was made 0600, and
// the file elsewhere, through its other name, 0600 too.
func TestAReapGivesNoBitToWhatIsSwappedInAfterItsLook(t *testing.T) {
	for _, at := range []string{"the dir", "meta.db"} {
		t.Run(at, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			expiredKey(t, s, clock, testKey)
			faults.Set(func(p faults.Point) error {
				if p == faults.ReapAfterRename {
					return errors.New("killed")
				}
				return nil
			})
			s.Reap(false)
			left, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+"*"))
			if len(left) != 1 {
				faults.Set(nil)
				t.Fatalf("the killed reap left %v", left)
			}
			aside := left[0]
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(elsewhere, []byte("not the store's\n"), 0o400); err != nil {
				t.Fatal(err)
			}
			victim := elsewhere
			meta := filepath.Join(aside, "meta.db")
			if err := os.Chmod(meta, 0o400); err != nil {
				t.Fatal(err)
			}
			if at == "the dir" {
				if err := os.Chmod(aside, 0o500); err != nil {
					t.Fatal(err)
				}
				victim = aside
			}
			moved := filepath.Join(filepath.Dir(elsewhere), "moved")
			t.Cleanup(func() { os.Chmod(aside, 0o700); os.Chmod(moved, 0o700) })
			swapped := false
			faults.Set(func(p faults.Point) error {
				if p != faults.ReapedBeforeGiveBits || swapped {
					return nil
				}
				swapped = true
				var err error
				if at == "the dir" {
					// The dir moved off, a file of the runner's at its name.
					if err = os.Rename(aside, moved); err == nil {
						err = os.WriteFile(aside, []byte("a file\n"), 0o400)
					}
				} else if err = os.Remove(meta); err == nil {
					err = os.Link(elsewhere, meta)
				}
				if err != nil {
					t.Error(err)
				}
				return nil
			})
			s.Reap(false)
			faults.Set(nil)
			if !swapped {
				t.Fatal("the reap gave no bit: the look found none lacking")
			}
			st, err := os.Lstat(victim)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o400 {
				t.Errorf("%s, swapped in after the look, is mode %04o; want 0400, as it was", victim, st.Mode().Perm())
			}
			if at == "the dir" {
				// Moved off at the look's seam, before any give: the dir
				// the look found got no bit either (else the swap came
				// after the give, and tested nothing).
				if st, err := os.Lstat(moved); err != nil || st.Mode().Perm() != 0o500 {
					t.Errorf("the dir moved off after the look: %v, %v; want it mode 0500, as it was", st.Mode(), err)
				}
			}
		})
	}
}
