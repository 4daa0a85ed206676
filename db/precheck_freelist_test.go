package db

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// The freelist page is judged on each of its header's fields alone: a page
// at the freelist's id whose flags are not a freelist's, or whose own id is
// another page's, or whose overflow passes the high-water mark, is damage
// to a reader too (which never reads the list): check reports it, and a
// writer's bbolt would read past the file or a page of the tree as its
// list.
func TestEachBadFreelistHeaderFieldIsDamage(t *testing.T) {
	for _, c := range []struct {
		name, want string
		damage     func(hdr []byte, m MetaPages)
	}{
		{"flags", "flags", func(hdr []byte, m MetaPages) { nativeEndian.PutUint16(hdr[8:], leafFlag) }},
		{"id", "has id", func(hdr []byte, m MetaPages) { nativeEndian.PutUint64(hdr[0:], m.Pages[m.Active].Freelist+1) }},
		{"overflow", "passes the high-water mark", func(hdr []byte, m MetaPages) {
			p := m.Pages[m.Active]
			nativeEndian.PutUint32(hdr[12:], uint32(p.Pgid-p.Freelist))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, 3)
			m, err := inspect(t, kd.db)
			if err != nil {
				t.Fatal(err)
			}
			file := readFile(t, kd.db)
			off := m.Pages[m.Active].Freelist * uint64(m.PageSize)
			c.damage(file[off:off+pageHeaderSize], m)
			if err := os.WriteFile(kd.db, file, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, write := range []bool{false, true} {
				err := openAndRead(kd, write)
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("write=%v: %v; want ErrDamaged saying %q", write, err, c.want)
				}
			}
		})
	}
}
