package shared

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// ListOrphans hands back, from its one listing of the dir, the temps of
// the dir's mark that are regular files older than the cut: not a young
// one (a marking under way), not a link or a directory at such a name,
// not the mark itself, and never among the names, nor asked about by
// referenced (they are no key's). A reap takes them from there rather
// than from a second listing of the dir.
func TestListOrphansHandsBackTheOldMarkTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	write := func(name string, at time.Time) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	oldTemp, youngTemp := MarkName+".tmp-0123456789abcdef", MarkName+".tmp-fedcba9876543210"
	linkTemp, dirTemp := MarkName+".tmp-00000000000000aa", MarkName+".tmp-00000000000000bb"
	orphan := key + "/0000000000000001-0123456789abcdef.jsonl"
	write(oldTemp, old)
	write(youngTemp, time.Now())
	write(MarkName, old)
	write("foreign", old)
	write(orphan, old)
	if err := os.Symlink(filepath.Join(dir, oldTemp), filepath.Join(dir, linkTemp)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, dirTemp), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, dirTemp), old, old); err != nil {
		t.Fatal(err)
	}
	var asked []string
	names, temps, unreadable, err := listOrphans(context.Background(), dir, func(_, name string, _ time.Time) bool {
		asked = append(asked, name)
		return false
	}, time.Now().Add(-time.Hour))
	if err != nil || unreadable != nil || !slices.Equal(names, []string{orphan}) || !slices.Equal(temps, []string{oldTemp}) || !slices.Equal(asked, []string{orphan}) {
		t.Errorf("ListOrphans = names %q, mark temps %q, unreadable %v, %v (asked about %q); want the orphan, the old mark temp alone, the orphan alone asked about", names, temps, unreadable, err, asked)
	}
}

// ListOrphans hands back every name its one listing found in the dir
// itself, sorted, whatever it is (a key's directory, the mark, a file or
// directory that is no key's, a link) and none from a key's directory: a
// check walks those that are no key's with a record from there rather
// than from a second listing of the dir.
func TestListOrphansHandsBackTheDirsNames(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{key, "not-a-key"} {
		if err := os.Mkdir(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{MarkName, "foreign", key + "/0000000000000001-0123456789abcdef.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("foreign", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	l, err := ListOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now().Add(-time.Hour))
	want := []string{MarkName, key, "foreign", "link", "not-a-key"}
	if err != nil || !slices.Equal(l.Names, want) {
		t.Errorf("ListOrphans = %+v, %v; want the names %q", l, err, want)
	}
}
