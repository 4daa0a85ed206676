package etcdmeta

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// HistoryKeys names each key that has a history once, in key order,
// whatever the count of its entries and the pages they take: a key whose
// record was removed alone included, and names that are no key (a bare
// one, one that sorts among another's entries) as found, at least once.
func TestHistoryKeysNamesEachHistoryOnce(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	saved := listPageSize
	listPageSize = 1 // pages of 10 keys
	defer func() { listPageSize = saved }()
	var want []string
	for i := range 5 {
		k := newKey()
		want = append(want, k)
		rev := mustPut(t, s, k, 0, 1)
		for g := range uint64(3 * i) {
			rev = mustPut(t, s, k, rev, g+2)
		}
	}
	stray := want[2]
	if _, err := s.cli.Delete(ctx(t), s.recordKey(stray)); err != nil {
		t.Fatal(err)
	}
	dir := s.cfg.Prefix + "/history/"
	for _, name := range []string{"abc", "abc!", "abc/x/0000000000000001"} {
		if _, err := s.cli.Put(ctx(t), dir+name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, "abc", "abc!")
	slices.Sort(want)
	want = slices.Compact(want)
	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		if n := count(got, k); n != 1 && (ValidKey(k) || n == 0) {
			t.Errorf("HistoryKeys named %s %d times; want once", k, n)
		}
	}
	if u := slices.Compact(slices.Sorted(slices.Values(got))); !slices.Equal(u, want) {
		t.Fatalf("HistoryKeys named %q; want %q", got, want)
	}
	// The histories spanned many pages (10 keys each).
	all, err := s.cli.Get(ctx(t), dir, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || all.Count < 30 {
		t.Fatalf("the history holds %d keys, %v; the test wants more than a page's", all.Count, err)
	}
}

func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// A history under the empty name ("<prefix>/history//…", no key's: put by
// hand or another tool) is named too, as every name that is no key is,
// whatever page it begins: check reports it, not-a-key. Before, a page
// began with no name met and took the empty one for it: such a history
// was named only where a name sorting before "/" ("!…", "…") shared its
// page.
func TestHistoryKeysNamesTheEmptyName(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	dir := s.cfg.Prefix + "/history/"
	k := newKey()
	mustPut(t, s, k, 0, 1)
	for _, name := range []string{dir + "/0000000000000001", dir + "/x/0000000000000001"} {
		if _, err := s.cli.Put(ctx(t), name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"", k}; !slices.Equal(got, want) {
		t.Fatalf("HistoryKeys named %q; want %q", got, want)
	}
}

// A name that is no key and is the start of a key's name ("abc" and
// "abc0…"): HistoryKeys, skipping the rest of the first's history once a
// page ends inside it, skips to the end of "abc/…" alone, never past
// "abc0…", whose history it names. (Skipped to the end of every name
// that starts "abc", check would not see such a key's history left
// without its record.)
func TestHistoryKeysSkipsNoKeyThatANameThatIsNoKeyStarts(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	saved := listPageSize
	listPageSize = 1 // pages of 10 keys
	defer func() { listPageSize = saved }()
	dir := s.cfg.Prefix + "/history/"
	// More entries than a page, so that the first page ends inside
	// "abc/".
	for i := range 12 {
		if _, err := s.cli.Put(ctx(t), fmt.Sprintf("%sabc/%016x", dir, i+1), "x"); err != nil {
			t.Fatal(err)
		}
	}
	key := "abc" + randHex(15)[:29]
	if !ValidKey(key) {
		t.Fatalf("%s is no key", key)
	}
	mustPut(t, s, key, 0, 1)
	if _, err := s.cli.Delete(ctx(t), s.recordKey(key)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := count(got, key); n != 1 {
		t.Errorf("HistoryKeys named %s, whose name starts with the name %q that is no key, %d times (named %q); want once", key, "abc", n, got)
	}
}

// HistoryKeys stops at the first error its function returns, and
// returns it.
func TestHistoryKeysStopsAtTheFunctionsError(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	for range 3 {
		mustPut(t, s, newKey(), 0, 1)
	}
	stop := errors.New("stop")
	calls := 0
	err := s.HistoryKeys(ctx(t), func(string) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("HistoryKeys with a function that fails: %v after %d calls; want its error after one", err, calls)
	}
}

// A key's history with an entry at the key's own name ("<prefix>/history/
// <key>", no slot: put by hand or another tool) that ends a page, the
// key's entries beginning the next: HistoryKeys names the key once, as
// its doc promises a key, not once on each page. Before, each page took
// its first name for one not met, and the key was named twice in a row
// (mutlate47's F01: dump's merge dropped the repeat; check's map did).
func TestHistoryKeysNamesAKeyOnceWhoseBareNameEndsAPage(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	saved := listPageSize
	listPageSize = 1 // pages of 10 keys
	defer func() { listPageSize = saved }()
	dir := s.cfg.Prefix + "/history/"
	key := "f" + randHex(16)[:31]
	if !ValidKey(key) {
		t.Fatalf("%s is no key", key)
	}
	// Nine entries of another name sort before the key's, then the
	// key's bare name: the tenth key, the first page's last.
	other := "0" + randHex(16)[:31]
	for i := range 9 {
		if _, err := s.cli.Put(ctx(t), fmt.Sprintf("%s%s/%016x", dir, other, i+1), "x"); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{dir + key, dir + key + "/0000000000000001", dir + key + "/0000000000000002"} {
		if _, err := s.cli.Put(ctx(t), name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.cli.Get(ctx(t), dir, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(10*listPageSize))
	if err != nil || len(first.Kvs) != 10 || string(first.Kvs[9].Key) != dir+key {
		t.Fatalf("the first page does not end at the key's bare name: %v", err)
	}
	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{other, key}; !slices.Equal(got, want) {
		t.Fatalf("HistoryKeys named %q; want %q, each once", got, want)
	}
}
