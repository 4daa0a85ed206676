package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/shellquote"
	"sessdb/store"
)

// orderedKeys is three keys in key order, named after what.
func orderedKeys(what string) (a, b, c string) {
	var keys []string
	for i := 0; len(keys) < 3; i++ {
		keys = append(keys, store.Key("github", "stray-order", fmt.Sprintf("%s-%d", what, i)))
	}
	slices.Sort(keys)
	return keys[0], keys[1], keys[2]
}

// strayHistory promotes key once and removes its record alone, as
// etcdctl del would: its history is left with no record.
func (f *fixture) strayHistory(key string) {
	f.t.Helper()
	f.run(key, "one")
	if _, err := f.c.Client(f.t).Delete(f.t.Context(), f.prefix+"/record/"+key); err != nil {
		f.t.Fatal(err)
	}
}

// dump is every report of an Inspect with opts, in the order delivered.
func (f *fixture) dump(o InspectOptions) []Report {
	f.t.Helper()
	var reports []Report
	if err := f.b.Inspect(context.Background(), o, func(r Report) error {
		reports = append(reports, r)
		return nil
	}); err != nil {
		f.t.Fatalf("inspect: %v", err)
	}
	return reports
}

// A history with no record removed between check's listing and its look
// at the key (etcdctl del --prefix, as the notice advises) is nothing to
// report: the key has neither record nor history.
func TestAHistoryWithNoRecordRemovedUnderCheckIsNoFinding(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "removed")
	f.strayHistory(key)
	dir := f.prefix + "/history/" + key + "/"
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			if _, err := c.Client(t).Delete(context.Background(), dir, clientv3.WithPrefix()); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[dir]; ok {
		t.Errorf("check reported the history removed under it: %+v", fd)
	}
}

// dump reports a key whose history has no record among the recorded
// keys, in key order, as it reports every key.
func TestDumpReportsAHistoryWithNoRecordInKeyOrder(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	first, stray, last := orderedKeys("order")
	f.run(first, "one")
	f.run(last, "one")
	f.strayHistory(stray)
	var names []string
	for _, r := range f.dump(InspectOptions{}) {
		names = append(names, r.Name)
	}
	if want := []string{first, stray, last}; !slices.Equal(names, want) {
		t.Fatalf("dump reported %q; want %q, in key order", names, want)
	}
}

// dump of a key whose history has no record and does not decode: absent,
// the history named undecodable with its error, the walk going on.
func TestDumpOfADamagedHistoryWithNoRecordSaysSo(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	kept := store.Key("github", "stray-history", "kept")
	f.run(kept, "one")
	key := store.Key("github", "stray-history", "damaged-dump")
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/x/0000000000000009", "x"); err != nil {
		t.Fatal(err)
	}
	reports := f.dump(InspectOptions{History: 8})
	var seen bool
	for _, r := range reports {
		if r.Name != key {
			continue
		}
		seen = true
		if r.Verdict == nil || r.Verdict.Reason != string(gates.Absent) || !strings.Contains(r.Problem, "does not decode") || r.MetaError == "" {
			t.Errorf("dump reported %+v; want absent, a history that does not decode, its error", r.KeyReport)
		}
	}
	if !seen || len(reports) != 2 {
		t.Fatalf("dump reported %d keys (the damaged one: %v); want both", len(reports), seen)
	}
}

// A key whose history had no record when dump listed the keys, promoted
// before dump reads it, is reported at its new record, as a recorded
// key is: not "no record", not absent.
func TestDumpOfAHistoryWithNoRecordPromotedUnderItReportsTheRecord(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	first, stray, _ := orderedKeys("promoted")
	f.run(first, "one")
	f.strayHistory(stray)
	f.b.hook = func(p, k string) error {
		if p == hookOpen && k == first {
			f.b.hook = nil
			f.run(stray, "two")
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	reports := f.dump(InspectOptions{Workers: 1})
	if len(reports) != 2 || reports[1].Name != stray {
		t.Fatalf("dump reported %+v; want %s, then %s", reports, first, stray)
	}
	if r := reports[1]; strings.HasPrefix(r.Problem, "no record") || r.Verdict == nil || r.Verdict.Reason == string(gates.Absent) {
		t.Errorf("dump reported the key promoted under it as %+v; want it at its new record", r.KeyReport)
	}
}

// The notice for a history with no record names it as one word a shell
// gives etcdctl whole, under a prefix that holds what a shell reads.
func TestTheNoticeForAHistoryWithNoRecordQuotesItsPrefix(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	prefix := "/sessdb/" + randHex(4) + " it's"
	f := newFixture(t, c, func(cfg *Config) { cfg.Prefix = prefix })
	f.prefix = prefix
	key := store.Key("github", "stray-history", "quoted")
	f.strayHistory(key)
	dir := prefix + "/history/" + key + "/"
	found, _ := checkFindings(t, f.b, CheckOptions{})
	fd, ok := found[dir]
	if !ok {
		t.Fatalf("check found %+v; want a notice at %s", found, dir)
	}
	if want := "etcdctl del --prefix " + shellquote.Word(dir); !strings.Contains(fd.Detail, want) || shellquote.Word(dir) == dir {
		t.Errorf("the notice says %q; want it to name %q", fd.Detail, want)
	}
}

// A history with no record that check cannot read (etcd lost between
// the listing and the look at the key: here the client closed) stops
// the check with the error, as a recorded key's unreadable history does,
// rather than pass the key over as having nothing to report.
func TestAHistoryWithNoRecordUnreadableUnderCheckStopsIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "unreadable")
	f.strayHistory(key)
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			f.b.meta.Close()
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	if _, err := f.b.Check(context.Background(), CheckOptions{}, func(store.Finding) error { return nil }); err == nil {
		t.Errorf("check whose read of a history with no record failed: no error; want the failure")
	}
}

// dump reports a history whose name is no key and that has no record,
// "not a key", as check names it (not-a-key) and as dump reports such a
// record: each such name once, a name HistoryKeys gives out of its order
// ("a" after "a!", whose keys sort before "a/…") too, and a name with a
// record and a history once. Before, dump skipped every such history:
// check named it and dump did not list it.
func TestDumpReportsAHistoryWhoseNameIsNoKeyAsCheckDoes(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "not-a-key-beside")
	f.run(key, "one")
	cli := c.Client(t)
	rec, err := cli.Get(t.Context(), f.prefix+"/record/"+key)
	if err != nil || len(rec.Kvs) != 1 {
		t.Fatalf("the record: %v %v", rec, err)
	}
	for _, k := range []string{"/history/zz/0000000000000001", "/history/a!/0000000000000001", "/history/a/0000000000000001", "/history/a/0000000000000002", "/history/a", "/history/yy/0000000000000001", "/record/yy"} {
		v := "x"
		if k == "/record/yy" {
			v = string(rec.Kvs[0].Value)
		}
		if _, err := cli.Put(t.Context(), f.prefix+k, v); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, r := range f.dump(InspectOptions{}) {
		names = append(names, r.Name)
		if r.Name != key && (r.Problem != "not a key" || r.Verdict != nil) {
			t.Errorf("dump reported %q as %+v; want not a key, no verdict", r.Name, r.KeyReport)
		}
	}
	slices.Sort(names)
	want := []string{"a", "a!", key, "yy", "zz"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("dump reported %q; want %q, each once", names, want)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	for _, n := range []string{"a", "a!", "zz"} {
		if fd, ok := found[f.prefix+"/history/"+n+"/"]; !ok || fd.Kind != store.KindNotAKey {
			t.Errorf("check found %+v at %s/history/%s/; want not-a-key", fd, f.prefix, n)
		}
	}
}

// A history whose name is no key and that the listing of the histories'
// names gives only out of its order ("x!/…" sorts before "x/…", and no
// entry at "x" itself) is reported too, after the records, once: a record
// of that name reported already is not reported again, and dump's visit
// refusing it stops the walk with that error. Before, no test gave a name
// only out of its order: mutants of listWithStrays that never reported
// such a name (late not kept), or reported a record's name twice (a
// record's name not marked emitted), lived.
func TestDumpReportsAHistoryNameGivenOutOfOrderOnce(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "out-of-order")
	f.run(key, "one")
	cli := c.Client(t)
	rec, err := cli.Get(t.Context(), f.prefix+"/record/"+key)
	if err != nil || len(rec.Kvs) != 1 {
		t.Fatalf("the record: %v %v", rec, err)
	}
	for _, k := range []string{"/history/x!/0000000000000001", "/history/x/0000000000000001", "/history/y!/0000000000000001", "/history/y/0000000000000001", "/record/y"} {
		v := "x"
		if k == "/record/y" {
			v = string(rec.Kvs[0].Value)
		}
		if _, err := cli.Put(t.Context(), f.prefix+k, v); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, r := range f.dump(InspectOptions{}) {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	want := []string{key, "x", "x!", "y", "y!"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("dump reported %q; want %q, each once", names, want)
	}
	refused := errors.New("the visit refused x")
	err = f.b.Inspect(t.Context(), InspectOptions{}, func(r Report) error {
		if r.Name == "x" {
			return refused
		}
		return nil
	})
	if !errors.Is(err, refused) {
		t.Errorf("dump whose visit refused x: %v; want the visit's error", err)
	}
}
