package fleet

import (
	"os/exec"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
	"sessdb/internal/shellquote"
	"sessdb/store"
)

// check --repair leaves a record that does not decode to the operator,
// and its advice names what to remove exactly: the key's history and its
// record, with the fleet's prefix, the history first. Before, it said
// "remove the record with etcdctl": done so, the key's history stayed
// without a record, and the key's next promotion went on from it.
func TestRepairAdviceForAnUndecodableRecordNamesItsHistoryAndRecord(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "undecodable", "advice")
	f.run(key, "one")
	cli := c.Client(t)
	if _, err := cli.Put(t.Context(), f.prefix+"/record/"+key, "\xc1"); err != nil {
		t.Fatal(err)
	}
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var advice string
	for _, fd := range found {
		if fd.Kind == store.KindRecordUndecodable && fd.Path == f.prefix+"/record/"+key {
			advice = fd.Repair
		}
	}
	history := "etcdctl del --prefix " + f.prefix + "/history/" + key + "/"
	record := "etcdctl del " + f.prefix + "/record/" + key
	if !strings.Contains(advice, history+"; "+record) {
		t.Fatalf("the repair's advice for the undecodable record is %q; want it to name %q, then %q (findings %+v)", advice, history, record, found)
	}
	// Done as it says, nothing of the key is left in etcd.
	if _, err := cli.Delete(t.Context(), f.prefix+"/history/"+key+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	left, err := cli.Get(t.Context(), f.prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range left.Kvs {
		if strings.Contains(string(kv.Key), key) {
			t.Errorf("left in etcd after the advice: %s", kv.Key)
		}
	}
}

// A prefix that holds what a shell reads is quoted in the advice, as one
// word a shell gives etcdctl whole.
func TestShellWordIsOneWordToAShell(t *testing.T) {
	for _, s := range []string{"/sessdb/record/0123", "/a b/it's", "/$HOME/x", "/a;b", ""} {
		// One word: one argument, the empty string's too.
		out, err := exec.Command("sh", "-c", `set -- `+shellquote.Word(s)+`; printf '%s:%s' "$#" "$1"`).Output()
		if err != nil || string(out) != "1:"+s {
			t.Errorf("sh given %s printed %q, %v; want %q, one argument", shellquote.Word(s), out, err, "1:"+s)
		}
	}
}
