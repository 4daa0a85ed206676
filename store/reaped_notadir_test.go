package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
)

// giveReapedBits gives the owner's bits to a reap-owned dir and its
// meta.db alone: a regular file at a reap-owned name (reap fails it, "not
// a real directory", and check calls it a not-a-key notice that sessdb
// leaves alone), a directory at a reap-owned dir's meta.db name (a
// foreign entry: the dir is failed, not removed), and a meta.db with a
// second name (a chmod of it changes that other name's file) keep their
// modes through a reap, its dry run and check --repair. Before, the reap
// gave the file at the reap-owned name u+x (0600 became 0700), the
// directory at meta.db's name u+w, and the hard-linked meta.db u+w, each
// then left as it was found.
func TestAReapGivesBitsToAReapOwnedDirAndItsMetaDBAlone(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{TTL: time.Hour})
	key := Key("github", "acme/widget", "not a reaped dir")
	key2 := Key("github", "acme/widget", "a reaped dir holding a dir")
	key3 := Key("github", "acme/widget", "a reaped dir with a linked meta.db")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, ReapedPrefix+key+"-0123456789abcdef")
	if err := os.WriteFile(file, []byte("an operator's file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(root, ReapedPrefix+key2+"-0123456789abcdef")
	inner := filepath.Join(dir2, "meta.db")
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(inner, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(inner, 0o700) })
	dir3 := filepath.Join(root, ReapedPrefix+key3+"-0123456789abcdef")
	if err := os.Mkdir(dir3, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(other, []byte("not a meta.db\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(other, filepath.Join(dir3, "meta.db")); err != nil {
		t.Fatal(err)
	}
	modes := func() [3]os.FileMode {
		var m [3]os.FileMode
		for i, p := range []string{file, inner, other} {
			st, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			m[i] = st.Mode()
		}
		return m
	}
	before := modes()
	for _, dry := range []bool{true, false} {
		if _, err := s.Reap(dry); err != nil {
			t.Fatalf("reap (dry run %v): %v", dry, err)
		}
		if after := modes(); after != before {
			t.Errorf("reap (dry run %v) changed the modes of the file at a reap-owned name, the dir at meta.db's name and the linked meta.db's other name: %v, were %v", dry, after, before)
		}
	}
	if _, err := s.Check(t.Context(), CheckOptions{Repair: true}, nil); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	if after := modes(); after != before {
		t.Errorf("check --repair changed the modes: %v, were %v", after, before)
	}
}
