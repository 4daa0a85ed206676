package db

import (
	"hash/fnv"
	"os"
	"strings"
	"testing"
)

// bbolt's check reads both meta pages' headers first, and one that is
// invalid (zeroed) panicked it there: Check returned that panic as its one
// problem, a meta page InspectMeta already names, and checked nothing of
// the commit bbolt uses: a sound file was reported inconsistent (check
// --repair moved it aside as meta-check-failed), and a file whose commit
// was inconsistent said only the panic. Now the commit in use is walked,
// whichever page is invalid.
func TestCheckWalksTheCommitInUsePastAnInvalidMetaPage(t *testing.T) {
	for _, c := range []struct {
		name  string
		zero  func(m MetaPages) int // the meta page zeroed
		extra int                   // unreachable pages added to the commits
	}{
		{"the spare page zeroed", func(m MetaPages) int { return 1 - m.Active }, 0},
		{"the newest page zeroed", func(m MetaPages) int { return m.Active }, 0},
		{"the spare page zeroed, pages unreachable", func(m MetaPages) int { return 1 - m.Active }, 3},
		{"the newest page zeroed, pages unreachable", func(m MetaPages) int { return m.Active }, 3},
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
			z := m.Pages[c.zero(m)].Offset
			clear(file[z : z+int64(m.PageSize)])
			if err := os.WriteFile(kd.db, file, 0o600); err != nil {
				t.Fatal(err)
			}

			r, err := OpenReader(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if p := r.MetaPages(); p.Pages[0].Valid() == p.Pages[1].Valid() {
				t.Fatalf("fixture: meta pages %+v; want one invalid", p.Pages)
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
