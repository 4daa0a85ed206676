package db

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"reflect"
	"strings"
	"testing"
)

// Check returns at most max problems and counts the rest in one more line,
// as its doc says: check prints that line, and a caller that stopped at max
// would report a file with many problems as one with few.
func TestCheckCountsTheProblemsPastItsMax(t *testing.T) {
	kd := makeDB(t, 3)
	const extra = 5
	file := readFile(t, kd.db)
	m, err := InspectMeta(memPages(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	// The active meta page's high-water mark raised past extra zeroed pages
	// the tree never reaches and the freelist does not list: bbolt's check
	// reports each as unreachable, and no open refuses the file for it.
	off := m.Pages[m.Active].Offset + pageHeaderSize
	meta := file[off : off+metaSize]
	nativeEndian.PutUint64(meta[40:], m.Pages[m.Active].Pgid+extra)
	h := fnv.New64a()
	h.Write(meta[:metaSumBytes])
	nativeEndian.PutUint64(meta[metaSumBytes:], h.Sum64())
	file = append(file[:m.HighWater()], make([]byte, extra*m.PageSize)...)
	if err := os.WriteFile(kd.db, file, 0o600); err != nil {
		t.Fatal(err)
	}

	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all, err := r.Check(100)
	if err != nil || len(all) != extra {
		t.Fatalf("Check(100) = %q, %v; want the %d unreachable pages", all, err, extra)
	}
	for _, p := range all {
		if !strings.Contains(p, "unreachable") {
			t.Fatalf("Check(100) = %q; want unreachable pages only", all)
		}
	}
	for _, max := range []int{0, 2, extra - 1, extra} {
		got, err := r.Check(max)
		want := append([]string(nil), all[:max]...)
		if max < extra {
			want = append(want, fmt.Sprintf("and %d more", extra-max))
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Check(%d) = %q, %v; want %q", max, got, err, want)
		}
	}
}

// A writer's Check judges the file as it is now, not as the open found it:
// damage written since by a process that ignores the lock is reported as
// an error, and bbolt's check never walks pages the pre-check refuses (its
// goroutine is beyond any recover: a cycle there kills the process).
func TestAWritersCheckRefusesDamageSinceTheOpen(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, kd keyDir, m MetaPages)
	}{
		{"both meta pages torn", func(t *testing.T, kd keyDir, m MetaPages) {
			tearMeta(t, kd.db, m, 0)
			tearMeta(t, kd.db, m, 1)
		}},
		{"freelist page flags", func(t *testing.T, kd keyDir, m MetaPages) {
			off := int64(m.Pages[m.Active].Freelist) * int64(m.PageSize)
			writeAt(t, kd.db, off+8, nativeEndian.AppendUint16(nil, leafFlag))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, 3)
			w, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			m, err := inspect(t, kd.db)
			if err != nil {
				t.Fatal(err)
			}
			c.damage(t, kd, m)
			problems, err := w.Check(10)
			if !errors.Is(err, ErrDamaged) || problems != nil {
				t.Errorf("Check after the damage = %q, %v; want no problems and ErrDamaged", problems, err)
			}
		})
	}
}
