package fleet

import (
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
)

// dump reports each key once, in key order, however the histories' names
// are listed: a name put by hand at a key's own history name (no entry
// under it), and another name no key's between it and the key's entries
// ("<key>!…" sorts before "<key>/…"), make the listing of the histories'
// names give the key twice, not one after the other. The second is the
// key met again, not a history with no record to report beside its
// record. "<key>!" is a history whose name is no key, with no record:
// reported once, "not a key", in its place, as check names it.
func TestDumpReportsAKeyOnceWhereTheHistoriesNameItTwice(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	first, key, last := orderedKeys("named-twice")
	for _, k := range []string{first, key, last} {
		f.run(k, "one")
	}
	for _, name := range []string{key, key + "!/x"} {
		if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, r := range f.dump(InspectOptions{}) {
		names = append(names, r.Name)
	}
	if want := []string{first, key, key + "!", last}; !slices.Equal(names, want) {
		t.Fatalf("dump reported %q; want %q, each once in key order", names, want)
	}
}

// A key whose history has no record, beside a history named "<key>!"
// (no key's, and listed before the key's own: "<key>!/…" sorts before
// "<key>/…"), is reported by dump, its history with it, as check names
// it. dump placed "<key>!" first and took the key that followed for one
// met again: it reported "<key>!" and never the key, while check named
// both.
func TestDumpReportsAStrayKeyListedAfterANameNoKeysThatSortsAfterIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	first, key, last := orderedKeys("passed-by-a-name")
	f.run(first, "one")
	f.strayHistory(key)
	f.run(last, "one")
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"!/x", "x"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range f.dump(InspectOptions{}) {
		names = append(names, r.Name)
	}
	if want := []string{first, key + "!", key, last}; !slices.Equal(names, want) {
		t.Errorf("dump reported %q; want %q, each once", names, want)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if _, ok := found[f.prefix+"/history/"+key+"/"]; !ok {
		t.Errorf("check found %+v; want the key's history with no record named", found)
	}
}
