package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A directory inside a key's directory that the fleet does not write is
// a notice that says check never looks inside it: the links below it are
// not reported (check reads nothing below it, however large the tree).
// Before, the
// notice said only "sessdb leaves it alone", which a reader took for the
// tree checked, while a link one level down went unreported; a link at
// the key's directory's own level is still a problem.
func TestCheckSaysItNeverLooksInsideAnUnknownDirInAKeysDirectory(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "unknown-dir", "k")
	f.run(key, "one")
	sub := filepath.Join(f.dir, key, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "deeper"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{filepath.Join(sub, "link"), filepath.Join(sub, "deeper", "link"), filepath.Join(f.dir, key, "link")} {
		if err := os.Symlink("/etc/passwd", l); err != nil {
			t.Fatal(err)
		}
	}
	found, sum := checkFindings(t, f.b, CheckOptions{})
	got, ok := found[key+"/sub"]
	if !ok || got.Kind != store.KindUnknownEntry || got.Severity != store.SeverityNotice ||
		!strings.Contains(got.Detail, "never looks inside it (a link below it is not reported)") {
		t.Errorf("check found %+v; want a notice at %s/sub saying it never looks inside it", found, key)
	}
	if l, ok := found[key+"/link"]; !ok || l.Kind != store.KindLink {
		t.Errorf("check found %+v; want the link at the key's directory's level a problem", found)
	}
	for path := range found {
		if strings.HasPrefix(path, key+"/sub/") {
			t.Errorf("check reported %s below the unknown dir: %+v", path, found[path])
		}
	}
	if sum.Problems != 1 {
		t.Errorf("check = %+v; want one problem, the link beside the generation", sum)
	}
}
