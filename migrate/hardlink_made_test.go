package migrate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// An empty meta.db with a second name (a copy of the root made with cp
// -al) is the file the run found, not one its own open made, although
// that open gives it a file of its own (a copy renamed over it, another
// inode): the run reports what its dry run planned, both ways, and the
// other name's file is left as it was.
func TestAHardLinkedEmptyMetaDBIsNotTheRunsOwn(t *testing.T) {
	for _, back := range []bool{false, true} {
		root, key := oneKey(t)
		dir := filepath.Join(root, key)
		kd, err := fsat.OpenDir(dir)
		must(t, err)
		d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
		must(t, err)
		must(t, d.Close())
		kd.Close()
		other := filepath.Join(t.TempDir(), db.FileName)
		must(t, os.Link(filepath.Join(dir, db.FileName), other))
		was, err := os.ReadFile(other)
		must(t, err)

		dry := testOpts()
		dry.DryRun = true
		plan, _ := migrate(t, root, back, dry)
		got, _ := migrate(t, root, back, testOpts())
		p, r := plan[key], got[key]
		if p.Action != r.Action || fmt.Sprint(p.Removed) != fmt.Sprint(r.Removed) || fmt.Sprint(p.Oddities) != fmt.Sprint(r.Oddities) {
			t.Errorf("%s: the run reported %s, removed %v, oddities %v; its dry run planned %s, removed %v, oddities %v",
				direction(back), r.Action, r.Removed, r.Oddities, p.Action, p.Removed, p.Oddities)
		}
		if sc, ok := dbValues(t, dir); back == ok || !back && sc.Transcript == nil {
			t.Errorf("%s: meta.db after the run: %v, record %+v", direction(back), ok, sc)
		}
		if now, err := os.ReadFile(other); err != nil || string(now) != string(was) {
			t.Errorf("%s: the other name's file changed (%v)", direction(back), err)
		}
	}
}
