package db

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/faults"
)

// An error at either step of a new meta.db's creation around its link
// fails the open and leaves no temp: before the link no meta.db either;
// after it the meta.db linked stays, whole and with no record, and the
// next writer opens it and commits.
func TestACreationFailedAroundItsLinkLeavesNoTemp(t *testing.T) {
	injected := errors.New("injected: input/output error")
	for _, tc := range []struct {
		at     faults.Point
		linked bool
	}{
		{faults.DBCreateBeforeLink, false},
		{faults.DBCreateLinked, true},
	} {
		t.Run(string(tc.at), func(t *testing.T) {
			kd := newKeyDir(t)
			faults.Set(func(p faults.Point) error {
				if p == tc.at {
					return injected
				}
				return nil
			})
			defer faults.Set(nil)
			d, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err == nil {
				d.Close()
			}
			wantErr(t, err, injected)
			faults.Set(nil)
			ents, err := os.ReadDir(kd.path)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
				if strings.HasPrefix(e.Name(), TempPrefix) {
					t.Errorf("the failed creation left its temp %s", e.Name())
				}
			}
			_, err = os.Lstat(filepath.Join(kd.path, FileName))
			if linked := err == nil; linked != tc.linked {
				t.Errorf("after an error at %s: meta.db there %t (%v; the dir holds %v), want %t", tc.at, linked, err, names, tc.linked)
			}
			if open := openTemps(t); len(open) != 0 {
				t.Errorf("the failed creation's temp is still open: %v", open)
			}
			putVenue(t, kd, "elsewhere") // the next writer opens or makes it, and commits
		})
	}
}
