package fleet

import (
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key put by hand at a history's bare name ("<prefix>/history/<key>",
// no "/": no entry's, none of sessdb's writes) is a notice of check's,
// naming the etcdctl del that removes it, whether its key has no record
// (the key then listed by dump as a history with no record, an entry of
// check's) or has one. The del --prefix check names for a history with no
// record does not remove it, nor does the key's reap; the del named does.
// Before, check counted the key with no record as an entry and found
// nothing, and said nothing of the other.
func TestAKeyAtAHistorysBareNameIsANoticeNamingItsRemoval(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	alone, recorded := store.Key("github", "bare-history", "alone"), store.Key("github", "bare-history", "recorded")
	f.runExpired(recorded, "one")
	cli := c.Client(t)
	for _, k := range []string{alone, recorded} {
		if _, err := cli.Put(t.Context(), f.prefix+"/history/"+k, "put by hand"); err != nil {
			t.Fatal(err)
		}
	}
	want := func(k string) (string, string) {
		bare := f.prefix + "/history/" + k
		return bare, "etcdctl del " + bare
	}
	found, sum := checkFindings(t, f.b, CheckOptions{})
	for _, k := range []string{alone, recorded} {
		bare, del := want(k)
		got, ok := found[bare]
		if !ok || got.Kind != store.KindUnknownEntry || got.Severity != store.SeverityNotice || got.Key != k {
			t.Errorf("check found %+v; want a notice unknown-entry at %s", found, bare)
			continue
		}
		if !strings.HasSuffix(got.Detail, del) || !strings.Contains(got.Detail, "bare name") {
			t.Errorf("%s: the finding says %q; want it to end naming %q", k, got.Detail, del)
		}
	}
	if sum.Problems != 0 || sum.Notices != 2 {
		t.Errorf("check = %+v; want two notices, no problem", sum)
	}
	// dump lists the key with no record, saying why as check does.
	var reports []Report
	if err := f.b.Inspect(t.Context(), InspectOptions{}, func(r Report) error {
		reports = append(reports, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, r := range reports {
		if r.Name != alone {
			continue
		}
		seen = true
		if !strings.HasPrefix(r.Problem, "no record and no history, but a key at its history's bare name") {
			t.Errorf("dump reported %s: %q; want it to name the key at its history's bare name", alone, r.Problem)
		}
	}
	if !seen {
		t.Errorf("dump did not list %s", alone)
	}
	// check --repair leaves it, remaining; so do what removes a history
	// with no record and the key's reap.
	found, _ = checkFindings(t, f.b, CheckOptions{Repair: true})
	for _, k := range []string{alone, recorded} {
		if bare, _ := want(k); found[bare].Kind != store.KindUnknownEntry || !found[bare].Remains {
			t.Errorf("check --repair found %+v; want %s named, remaining", found, bare)
		}
	}
	if _, err := cli.Delete(t.Context(), f.prefix+"/history/"+alone+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour}); err != nil || !slices.Equal(r.Removed, []string{recorded}) {
		t.Fatalf("reap = %+v, %v; want %s removed", r, err, recorded)
	}
	found, _ = checkFindings(t, f.b, CheckOptions{})
	for _, k := range []string{alone, recorded} {
		if bare, _ := want(k); found[bare].Kind != store.KindUnknownEntry {
			t.Errorf("after del --prefix and the reap, check found %+v; want %s still named", found, bare)
		}
	}
	// Removed as the finding says, nothing is left to report.
	for _, k := range []string{alone, recorded} {
		bare, _ := want(k)
		if _, err := cli.Delete(t.Context(), bare); err != nil {
			t.Fatal(err)
		}
	}
	if found, sum := checkFindings(t, f.b, CheckOptions{}); len(found) != 0 {
		t.Errorf("after the del named, check found %+v (%+v); want nothing", found, sum)
	}
}

// A key at a history's bare name removed after check listed the
// histories, before its walk came to the key, is nothing to report:
// check reads it again there. A check that took the listing's word
// reported a key no longer there (a mutant that skipped the read lived).
func TestAKeyAtAHistorysBareNameRemovedUnderCheckIsNotReported(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "bare-history", "removed under check")
	f.run(key, "one")
	cli := c.Client(t)
	bare := f.prefix + "/history/" + key
	if _, err := cli.Put(t.Context(), bare, "put by hand"); err != nil {
		t.Fatal(err)
	}
	reached := false
	f.b.hook = func(p, k string) error {
		if p == hookCheckEntry && k == key {
			reached = true
			if _, err := cli.Delete(t.Context(), bare); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if !reached {
		t.Fatal("the walk never came to the key")
	}
	if fd, ok := found[bare]; ok {
		t.Errorf("check reported %+v; want nothing of a key removed before the walk came to it", fd)
	}
}
