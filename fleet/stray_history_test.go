package fleet

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key's history whose record was removed alone (etcdctl del of the
// record, an older binary's or another tool's: no sessdb write leaves
// one) is seen by check and dump without a record: check names it, a
// notice (exit status unchanged), with the etcdctl command that removes
// it; dump shows the key, absent, with its history. Before, both said
// nothing of it until the key had a record again, by which time its next
// promotion had gone on from it.
func TestAHistoryWithNoRecordIsSeenByCheckAndDump(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	kept, stray := store.Key("github", "stray-history", "kept"), store.Key("github", "stray-history", "stray")
	f.run(kept, "one")
	f.run(stray, "one")
	f.run(stray, "two")
	cli := c.Client(t)
	if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+stray); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(t.Context(), f.prefix+"/history/not-a-key/0000000000000001", "x"); err != nil {
		t.Fatal(err)
	}
	dir := f.prefix + "/history/" + stray + "/"
	found, sum := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[f.prefix+"/history/not-a-key/"]; !ok || fd.Kind != store.KindNotAKey || fd.Severity != store.SeverityNotice {
		t.Errorf("check found %+v; want a notice not-a-key at %s/history/not-a-key/", found, f.prefix)
	}
	got, ok := found[dir]
	if !ok || got.Kind != store.KindUnknownEntry || got.Severity != store.SeverityNotice || got.Key != stray {
		t.Fatalf("check found %+v; want a notice unknown-entry at %s", found, dir)
	}
	if !strings.Contains(got.Detail, "etcdctl del --prefix "+dir) || !strings.Contains(got.Detail, "no record") {
		t.Errorf("the finding says %q; want it to name the history with no record and etcdctl del --prefix %s", got.Detail, dir)
	}
	if sum.Problems != 0 {
		t.Errorf("check = %+v; want no problem (a notice)", sum)
	}
	for path := range found {
		if strings.Contains(path, kept) {
			t.Errorf("check reported the kept key: %+v", found[path])
		}
	}
	// dump: the key, absent, its history shown.
	var reports []Report
	if err := f.b.Inspect(context.Background(), InspectOptions{History: 8}, func(r Report) error {
		reports = append(reports, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, r := range reports {
		if r.Name != stray {
			continue
		}
		seen = true
		if r.Verdict == nil || r.Verdict.Reason != string(gates.Absent) || !strings.HasPrefix(r.Problem, "no record, but a history of 2 entries") || len(r.History) != 2 {
			t.Errorf("dump reported the key %+v; want absent, no record, its 2 entries", r.KeyReport)
		}
	}
	if !seen || len(reports) != 3 {
		// The kept key, the stray one, and not-a-key, "not a key".
		t.Fatalf("dump reported %d entries (the stray one: %v); want the two keys and not-a-key", len(reports), seen)
	}
	// Removed as the finding says, nothing is left to report.
	if _, err := cli.Delete(t.Context(), dir, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	found, _ = checkFindings(t, f.b, CheckOptions{})
	if _, ok := found[dir]; ok {
		t.Errorf("check still reports %s after it was removed", dir)
	}
}

// A key promoted for the first time between check's listing of the
// records and its walk has a history and a record: nothing to report.
// (A promotion writes both in one transaction; only the listing is
// older.) So is a history left without its record whose key a promotion
// has taken since: the key has its record.
func TestAHistoryWhoseKeyIsPromotedUnderCheckIsNoFinding(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "promoted")
	f.run(key, "one")
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			f.run(key, "two")
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	found, _ := checkFindings(t, f.b, CheckOptions{})
	for path, fd := range found {
		if strings.Contains(path, "/history/") {
			t.Errorf("check reported %s: %+v", path, fd)
		}
	}
}

// A history with no record that is damaged too (a name of more than one
// segment, which makes every promotion of the key fail) is reported as a
// recorded key's damaged history is, a problem, beside the notice.
func TestADamagedHistoryWithNoRecordIsAProblem(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.marked()
	key := store.Key("github", "stray-history", "damaged")
	dir := f.prefix + "/history/" + key + "/"
	if _, err := c.Client(t).Put(t.Context(), dir+"x/0000000000000009", "x"); err != nil {
		t.Fatal(err)
	}
	var found []store.Finding
	sum, err := f.b.Check(context.Background(), CheckOptions{}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var problem, notice bool
	for _, fd := range found {
		problem = problem || (strings.HasPrefix(fd.Path, dir) && fd.Kind == store.KindRecordUndecodable && fd.Severity == store.SeverityProblem)
		notice = notice || (fd.Path == dir && fd.Kind == store.KindUnknownEntry)
	}
	if !problem || !notice || sum.Problems == 0 {
		t.Fatalf("check found %+v (%+v); want the damaged history a problem and the history with no record a notice", found, sum)
	}
	// A resolve of a key with no record cold-starts it (absent); the
	// problem's detail may not say the key resumes.
	for _, fd := range found {
		if fd.Kind == store.KindRecordUndecodable && strings.Contains(fd.Detail, "resumes") {
			t.Errorf("the damaged history of a key with no record: %q; a resolve of the key cold-starts it, never resumes", fd.Detail)
		}
	}
}

// What check's notice says the next promotion of a key with a history and
// no record does, it does: the key starts again at generation 1, and the
// promotion's entry is added to the history left behind.
func TestTheNextPromotionOfAHistoryWithNoRecordStartsAtGenOneAndAddsToIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "next promotion")
	f.run(key, "one")
	f.run(key, "two")
	if _, err := c.Client(t).Delete(t.Context(), f.b.meta.RecordKey(key)); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	notice := found[f.b.meta.HistoryDir(key)].Detail
	if !strings.Contains(notice, "its next promotion starts the key again at gen 1 and adds its entries to this history") {
		t.Errorf("the finding says %q; want it to say what the next promotion does", notice)
	}
	f.run(key, "three")
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Record.Transcript == nil || st.Record.Transcript.Gen != 1 || len(st.History) != 3 {
		t.Errorf("after the next promotion: record %+v, %d history entries; want gen 1 and the 2 entries left with its own added", st.Record.Transcript, len(st.History))
	}
}
