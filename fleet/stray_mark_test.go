package fleet

import (
	"testing"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A history under the name of the transcripts dir's mark (.sessdb-fleet:
// another tool's, or a hand's) is a history whose name is no key, as any
// other such name is: check reports it, a notice, at its history dir.
// Before, the name was dropped from the walk with the dir's own mark,
// and check said nothing of it. The mark itself is still no finding.
func TestAHistoryUnderTheMarksNameIsReported(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.marked()
	dir := f.prefix + "/history/" + shared.MarkName + "/"
	if _, err := c.Client(t).Put(t.Context(), dir+"0000000000000001", "x"); err != nil {
		t.Fatal(err)
	}
	found, sum := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[dir]; !ok || fd.Kind != store.KindNotAKey || fd.Severity != store.SeverityNotice {
		t.Errorf("check found %+v; want a notice not-a-key at %s", found, dir)
	}
	if fd, ok := found[shared.MarkName]; ok {
		t.Errorf("check reported the dir's mark: %+v", fd)
	}
	if sum.Problems != 0 {
		t.Errorf("check = %+v; want no problem", sum)
	}
}
