package db

import (
	"hash/fnv"
	"os"
	"strings"
	"testing"
)

// bbolt's check reads both meta pages' headers first, and one that is
// invalid (zeroed), or a valid one whose header's id is not its own (a
// byte no checksum covers and no open reads), panicked it there: Check
// returned that panic as its one problem, and checked nothing of the
// commit bbolt uses: a sound file was reported inconsistent (check
// --repair moved it aside as meta-check-failed), and a file whose commit
// was inconsistent said only the panic. Now the commit in use is walked,
// whichever page is damaged.
func TestCheckWalksTheCommitInUsePastAnInvalidMetaPage(t *testing.T) {
	zero := func(i func(MetaPages) int) func([]byte, MetaPages) {
		return func(file []byte, m MetaPages) {
			z := m.Pages[i(m)].Offset
			clear(file[z : z+int64(m.PageSize)])
		}
	}
	// The header's id, which neither the meta's checksum covers nor
	// bbolt's open reads.
	header := func(i func(MetaPages) int) func([]byte, MetaPages) {
		return func(file []byte, m MetaPages) { file[m.Pages[i(m)].Offset] ^= 0x06 }
	}
	// The header's flags, the same: a meta page's are 0x04, and bbolt's
	// check asserts one page type is set.
	flags := func(i func(MetaPages) int) func([]byte, MetaPages) {
		return func(file []byte, m MetaPages) { file[m.Pages[i(m)].Offset+8] = 0 } // no page type
	}
	spare := func(m MetaPages) int { return 1 - m.Active }
	newest := func(m MetaPages) int { return m.Active }
	for _, c := range []struct {
		name    string
		damage  func(file []byte, m MetaPages)
		invalid bool // the damage makes a meta page invalid
		extra   int  // unreachable pages added to the commits
	}{
		{"the spare page zeroed", zero(spare), true, 0},
		{"the newest page zeroed", zero(newest), true, 0},
		{"the spare page zeroed, pages unreachable", zero(spare), true, 3},
		{"the newest page zeroed, pages unreachable", zero(newest), true, 3},
		{"the spare page's header id flipped", header(spare), false, 0},
		{"the newest page's header id flipped", header(newest), false, 0},
		{"the newest page's header id flipped, pages unreachable", header(newest), false, 3},
		{"the spare page's header flags changed", flags(spare), false, 0},
		{"the newest page's header flags changed, pages unreachable", flags(newest), false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, 3)
			file := readFile(t, kd.db)
			m, err := InspectMeta(memPages(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			hw := m.HighWater()
			if c.extra > 0 {
				// Both commits' high-water marks raised past zeroed pages
				// that neither tree reaches nor freelist lists.
				for _, p := range m.Pages {
					meta := file[p.Offset+pageHeaderSize : p.Offset+pageHeaderSize+metaSize]
					nativeEndian.PutUint64(meta[40:], p.Pgid+uint64(c.extra))
					h := fnv.New64a()
					h.Write(meta[:metaSumBytes])
					nativeEndian.PutUint64(meta[metaSumBytes:], h.Sum64())
					hw = max(hw, int64(p.Pgid+uint64(c.extra))*int64(m.PageSize))
				}
				file = append(file[:m.HighWater()], make([]byte, hw-m.HighWater())...)
			}
			c.damage(file, m)
			if err := os.WriteFile(kd.db, file, 0o600); err != nil {
				t.Fatal(err)
			}

			r, err := OpenReader(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if p := r.MetaPages(); (p.Pages[0].Valid() && p.Pages[1].Valid()) == c.invalid {
				t.Fatalf("fixture: meta pages %+v; want one invalid: %v", p.Pages, c.invalid)
			}
			problems, err := r.Check(100)
			if err != nil || len(problems) != c.extra {
				t.Fatalf("Check = %q, %v; want %d unreachable pages", problems, err, c.extra)
			}
			for _, p := range problems {
				if !strings.Contains(p, "unreachable") {
					t.Fatalf("Check = %q; want unreachable pages only", problems)
				}
			}
			if got := readFile(t, kd.db); string(got) != string(file) {
				t.Fatal("Check changed the file")
			}
		})
	}
}
