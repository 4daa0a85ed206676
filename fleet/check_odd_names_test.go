package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A directory at the top of the transcripts dir whose name is no key
// (lost+found) is not looked inside, as an odd directory in a key's
// directory is not: its notice says so, where it said only "sessdb leaves
// it alone" while a link below it went unreported. A file at such a name
// keeps the sessions root's words.
func TestCheckSaysItNeverLooksInsideADirThatIsNoKey(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "odd-names", "k"), "one")
	if err := os.Mkdir(filepath.Join(f.dir, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(f.dir, "lost+found", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "README.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	got, ok := found["lost+found"]
	if !ok || got.Kind != store.KindNotAKey || got.Severity != store.SeverityNotice ||
		!strings.Contains(got.Detail, "never looks inside it (a link below it is not reported)") {
		t.Errorf("check found %+v at lost+found; want a not-a-key notice saying it never looks inside it", got)
	}
	if got := found["README.txt"]; got.Detail != "not a key dir (a key is 32 lowercase hex); sessdb leaves it alone" {
		t.Errorf("check found %+v at README.txt; want the root's words", got)
	}
	for path := range found {
		if strings.HasPrefix(path, "lost+found/") {
			t.Errorf("check reported %s below the dir: %+v", path, found[path])
		}
	}
}

// A key put by hand at the bare name of a history whose name is no key
// ("<prefix>/history/not-a-key", no "/") is named at its own path, as
// what it is, with the etcdctl del that removes it; a history of entries
// at such a name beside it is still named at its dir. Before, the bare
// key alone was reported at "<prefix>/history/not-a-key/", a history
// that is not there, with no word of how to remove it.
func TestABareHistoryKeyAtANameThatIsNoKeyIsNamedAsWhatItIs(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.marked()
	cli := c.Client(t)
	for _, k := range []string{"/history/alone", "/history/both", "/history/both/0000000000000001"} {
		if _, err := cli.Put(t.Context(), f.prefix+k, "put by hand"); err != nil {
			t.Fatal(err)
		}
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	for _, name := range []string{"alone", "both"} {
		bare := f.prefix + "/history/" + name
		got, ok := found[bare]
		if !ok || got.Kind != store.KindNotAKey || got.Severity != store.SeverityNotice ||
			!strings.Contains(got.Detail, "a key at the bare name of a history whose name is not a key") ||
			!strings.HasSuffix(got.Detail, "etcdctl del "+bare) {
			t.Errorf("check found %+v at %s; want a not-a-key notice naming it and its etcdctl del", got, bare)
		}
	}
	if got, ok := found[f.prefix+"/history/alone/"]; ok {
		t.Errorf("check reported a history of entries at alone, which has none: %+v", got)
	}
	if got, ok := found[f.prefix+"/history/both/"]; !ok || got.Kind != store.KindNotAKey {
		t.Errorf("check found %+v; want the entries at both still a history whose name is not a key", got)
	}
	// Removed as named, the bare keys are gone and nothing else is.
	for _, name := range []string{"alone", "both"} {
		if _, err := cli.Delete(t.Context(), f.prefix+"/history/"+name); err != nil {
			t.Fatal(err)
		}
	}
	found, _ = checkFindings(t, f.b, CheckOptions{})
	if len(found) != 1 {
		t.Errorf("check found %v after the dels; want only both's history", found)
	}
	if _, err := cli.Delete(t.Context(), f.prefix+"/history/both/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
}
