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

// A writer refuses a freelist that lists a meta page or a page at or past
// the high-water mark: bbolt would hand it to the next commit, which would
// write over a meta page or past the pages the meta page counts.
func TestAWriterRefusesAFreelistListingAPageOutsideTheFile(t *testing.T) {
	kd := makeDB(t, 3)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	clean := readFile(t, kd.db)
	p := m.Pages[m.Active]
	for _, page := range []uint64{0, 1, p.Pgid, p.Pgid + 1} {
		file := append([]byte(nil), clean...)
		off := p.Freelist * uint64(m.PageSize)
		nativeEndian.PutUint16(file[off+10:], 1)
		nativeEndian.PutUint64(file[off+pageHeaderSize:], page)
		tr, err := tryWriter(kd, file, 0, "outside")
		if err != nil {
			t.Fatal(err)
		}
		if tr.outcome != "refused-open" {
			t.Errorf("the writer %s a file whose freelist lists page %d (high-water mark %d)", tr.outcome, page, p.Pgid)
		}
	}
}

// A writer refuses a freelist that lists one free page twice: bbolt would
// hand it to two nodes of one commit, and the second write would replace
// the first.
func TestAWriterRefusesAFreelistListingAPageTwice(t *testing.T) {
	kd := makeDB(t, HistoryLimit)
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	file := readFile(t, kd.db)
	off := m.Pages[m.Active].Freelist * uint64(m.PageSize)
	if n := nativeEndian.Uint16(file[off+10:]); n == 0 || n == 0xFFFF {
		t.Fatalf("the freelist lists %d ids; the test needs one or more, in the short form", n)
	}
	free := nativeEndian.Uint64(file[off+pageHeaderSize:])
	nativeEndian.PutUint16(file[off+10:], 2)
	nativeEndian.PutUint64(file[off+pageHeaderSize+8:], free)
	tr, err := tryWriter(kd, file, 0, "twice")
	if err != nil {
		t.Fatal(err)
	}
	if tr.outcome != "refused-open" {
		t.Errorf("the writer %s a file whose freelist lists page %d twice", tr.outcome, free)
	}
}
