package fleet

import (
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The whole of what check says of a bare history key at a name that is
// no key, and of a history with no record: every clause an operator acts
// on (what the key is, that sessdb never reads it, when the key's files
// go, the etcdctl del that removes it), word for word, where the tests
// before matched the notices' first and last words only.
func TestCheckSaysAllOfItsOddHistoryNotices(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	cli := c.Client(t)
	if _, err := cli.Put(t.Context(), f.prefix+"/history/alone", "put by hand"); err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "odd-words", "stray")
	f.run(key, "one")
	if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{Grace: time.Second})
	bare := f.prefix + "/history/alone"
	if got, want := found[bare].Detail, "a key at the bare name of a history whose name is not a key (a key is 32 lowercase hex), which no sessdb write makes and sessdb never reads; sessdb leaves it: remove it with etcdctl del "+bare; got != want {
		t.Errorf("the bare key's notice:\n%q\nwant\n%q", got, want)
	}
	dir := f.prefix + "/history/" + key + "/"
	if got, want := found[dir].Detail, "a history with no record: no sessdb write leaves one (the record removed alone with etcdctl, an older binary's or another tool's); a resolve cold-starts the key (absent), its next promotion starts the key again at gen 1 and adds its entries to this history, and migrate --to etcd leaves the key alone; the key's files in the transcripts dir are no record's, each an orphan, which reap removes, once it is 31 minutes old (a promotion of the key may be under way) and past the grace period; sessdb leaves the history: remove it with etcdctl del --prefix "+dir; got != want {
		t.Errorf("the history's notice:\n%q\nwant\n%q", got, want)
	}
}
