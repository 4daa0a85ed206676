package fleet

import (
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A history at a name that is no key is named by check whether or not a
// record of that name is there too: each is foreign input sessdb leaves
// alone, and each needs its own etcdctl del. Before, a record at the name
// hid the history: check named the record alone, and the history, which
// no reap removes, went unreported.
func TestAHistoryAtANameThatIsNoKeyBesideARecordOfThatNameIsReported(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.run(store.Key("github", "nokey-beside", "k"), "one")
	cli := c.Client(t)
	for _, k := range []string{"/record/both", "/history/both/0000000000000001", "/history/alone/0000000000000001"} {
		if _, err := cli.Put(t.Context(), f.prefix+k, "put by hand"); err != nil {
			t.Fatal(err)
		}
	}
	var at []string
	found, sum := checkFindings(t, f.b, CheckOptions{})
	for _, name := range []string{"both", "alone"} {
		hist := f.prefix + "/history/" + name + "/"
		got, ok := found[hist]
		if !ok || got.Kind != store.KindNotAKey || got.Severity != store.SeverityNotice ||
			!strings.HasPrefix(got.Detail, "a history whose name is not a key") {
			t.Errorf("check found %+v at %s; want a not-a-key notice for the history", got, hist)
		}
	}
	if got, ok := found[f.prefix+"/record/both"]; !ok || got.Kind != store.KindNotAKey {
		t.Errorf("check found %+v at the record; want it still a not-a-key notice", got)
	}
	for p := range found {
		at = append(at, p)
	}
	// One entry each: the key, "alone" and "both" (the record and the
	// history of one name are one entry, not walked twice).
	if sum.Entries != 3 || sum.Notices != 3 || sum.Problems != 0 {
		t.Errorf("summary %+v (findings at %q); want 3 entries, 3 notices, no problem", sum, at)
	}
}
