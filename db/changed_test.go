package db

import (
	"errors"
	"os"
	"testing"
)

// A meta.db cut to 0 bytes after its pre-check, under the lock (by a
// process that ignores it), is damaged, never an I/O fault nor a file
// opened: a reader of a file too large for a snapshot finds bbolt
// refusing it, a writer finds the file bbolt made afresh in its place
// not the one the pre-check judged (mutation sweep: the "changed under
// the lock" classification deleted, the case of a bbolt panic negated, or
// the return of the view's error dropped, which handed back a closed DB
// and no error; no test could change the file there).
func TestFileCutAfterItsPrecheckIsDamaged(t *testing.T) {
	defer func() { testHookPrechecked = nil }()
	for _, write := range []bool{false, true} {
		kd := makeDB(t, 2)
		if !write {
			kd = bigDB(t)
		}
		cut := 0
		testHookPrechecked = func() {
			cut++
			if err := os.Truncate(kd.db, 0); err != nil {
				t.Fatal(err)
			}
		}
		open := OpenReader
		if write {
			open = OpenWriter
		}
		d, err := open(kd.dir, kd.db, testOpts)
		testHookPrechecked = nil
		if d != nil {
			d.Close()
		}
		if cut != 1 {
			t.Fatalf("write %v: the file was cut %d times, want once", write, cut)
		}
		if d != nil || !errors.Is(err, ErrDamaged) {
			t.Errorf("write %v: open of a file cut under the lock = %v, %v; want ErrDamaged", write, d != nil, err)
		}
	}
}
