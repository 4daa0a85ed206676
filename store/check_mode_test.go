package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// A key dir, meta.db or transcript whose mode lacks the owner's bits the
// store needs of it (one an older sessdb made under a umask that took
// them, or a chmod) is a problem check names, kind mode: the key dir
// rwx, meta.db rw, the transcript r. --repair adds those bits and nothing
// else, and the look after it finds none. A mode with more bits, or a
// transcript with no write bit (a promotion replaces it by a rename), or
// any other name, is not reported. Before, check said nothing of any of
// them, while every promotion of the key failed for a worker that is not
// root.
func TestCheckGivesTheOwnerTheBitsTheStoreNeeds(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	bad := []modeCase{
		{runJobKey(t, s, "dir"), ".", 0o500, 0o700, "mode 0500: its owner may not write the key dir"},
		{runJobKey(t, s, "none"), ".", 0o000, 0o700, "mode 0000: its owner may not read, write or enter the key dir"},
		{runJobKey(t, s, "db"), db.FileName, 0o400, 0o600, "mode 0400: its owner may not write the meta.db"},
		{runJobKey(t, s, "transcript"), TranscriptName, 0o240, 0o640, "mode 0240: its owner may not read the current.jsonl"},
		// A key dir anyone may write in (no sticky bit: as the walks
		// judge a root) is named too, and --repair takes the others'
		// write bit, with any owner's bit it lacks in the same chmod.
		{runJobKey(t, s, "open"), ".", 0o777, 0o775, "mode 0777: anyone may write in the key dir (no sticky bit; sessdb makes it 0700): any user of the host may replace the key's meta.db or transcript"},
		{runJobKey(t, s, "open lacking"), ".", 0o577, 0o775, "mode 0577: its owner may not write the key dir"},
		// A sticky one lacking a bit keeps the others' write bit.
		{runJobKey(t, s, "sticky lacking"), ".", os.ModeSticky | 0o577, os.ModeSticky | 0o777, "mode 1577: its owner may not write the key dir"},
	}
	fine := []struct {
		key, name string
		mode      os.FileMode
	}{
		{runJobKey(t, s, "wide"), ".", 0o755},
		{runJobKey(t, s, "readonly transcript"), TranscriptName, 0o444},
		{runJobKey(t, s, "wide db"), db.FileName, 0o644},
		{runJobKey(t, s, "group writable"), ".", 0o770},
		{runJobKey(t, s, "sticky"), ".", os.ModeSticky | 0o777},
	}
	path := func(key, name string) string { return filepath.Join(root, key, name) }
	reported := map[string]bool{}
	for _, b := range bad {
		reported[b.path()] = true
	}
	t.Cleanup(func() {
		for _, b := range bad {
			os.Chmod(path(b.key, b.name), 0o700)
		}
	})
	for _, f := range fine {
		must(t, os.Chmod(path(f.key, f.name), f.mode))
	}
	// The modes are judged for the root's owner, which root is not:
	// root may use anything.
	givenToAWorker(t, root)
	// Files first: a key dir of mode 0 cannot be entered to chmod them.
	for i := len(bad) - 1; i >= 0; i-- {
		must(t, os.Chmod(path(bad[i].key, bad[i].name), bad[i].mode))
	}

	for _, repair := range []bool{false, true} {
		found := checkFindings(t, s, CheckOptions{Repair: repair})
		for _, b := range bad {
			want := b.path()
			var f *Finding
			for i := range found {
				if found[i].Path == want && found[i].Kind == KindMode {
					f = &found[i]
				}
			}
			switch {
			case f == nil:
				t.Errorf("repair %v: %s: no mode finding in %+v", repair, want, found)
			case !strings.HasPrefix(f.Detail, b.detail) || f.Severity != SeverityProblem:
				t.Errorf("repair %v: %s: %s %q, want a problem %q", repair, want, f.Severity, f.Detail, b.detail)
			case !repair && (f.Repaired || !f.Remains):
				t.Errorf("check alone: %s: %+v", want, f)
			case repair && (!f.Repaired || f.Remains || !strings.Contains(f.Repair, "gave its owner the bits it lacked") && !strings.Contains(f.Repair, "took the others' write bit")):
				t.Errorf("--repair: %s: %+v", want, f)
			}
		}
		for _, f := range found {
			if f.Kind == KindMode && !reported[f.Path] {
				t.Errorf("repair %v: a mode finding for a mode the store can use: %+v", repair, f)
			}
		}
	}
	for _, b := range bad {
		if fi, err := os.Lstat(path(b.key, b.name)); err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != b.want {
			t.Errorf("%s/%s after --repair: %v, %v; want mode %v", b.key, b.name, fi.Mode().Perm(), err, b.want)
		}
	}
	for _, f := range fine {
		if fi, _ := os.Lstat(path(f.key, f.name)); fi.Mode()&(os.ModePerm|os.ModeSticky) != f.mode {
			t.Errorf("%s/%s: --repair changed mode %v to %v", f.key, f.name, f.mode, fi.Mode().Perm())
		}
	}
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Errorf("after --repair: %+v", f)
		}
	}
}

// runJobKey promotes one run onto a key named for name and returns it.
func runJobKey(t *testing.T, s *Store, name string) string {
	t.Helper()
	key := Key("github", "acme/mode", name)
	runJob(t, s, key, localJob(), PromoteRequest{}, "turn "+name)
	return key
}

// modeCase is a key's entry (its dir's own is ".") given a mode the store
// cannot use, the mode --repair leaves it with, and check's detail.
type modeCase struct {
	key, name string
	mode      os.FileMode
	want      os.FileMode
	detail    string
}

// path is the finding's path: the key, or key/name.
func (c modeCase) path() string {
	if c.name == "." {
		return c.key
	}
	return c.key + "/" + c.name
}
