package main

import (
	"strings"
	"testing"
)

// dump --history N --key KEY for a key with no history entry printed the
// header alone, exit 0: a key that is not there, a legacy key dir and a
// migrated key looked the same, where the key table gives each a row and
// a NOTE. A line under the table now says why, as it does for a history
// that could not be read whole. A walk of the whole root lists the keys
// with entries and nothing for the others, as an empty root's table is
// its header alone.
func TestDumpHistoryOfAKeyWithNoneSaysWhy(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	const legacy, absent, withHistory = "efc1ddda39889994198ccddd21905257", "00000000000000000000000000000000", "4668107cac2e99b44415c5606b32ef14"
	lines := func(args ...string) []string {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errs)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	for _, c := range []struct{ key, want string }{
		{legacy, "note " + legacy + ": no history entries (a legacy key dir keeps none)"},
		{absent, "note " + absent + ": no history entries (no key dir)"},
	} {
		got := lines("dump", "--history", "5", "--key", c.key, root)
		if len(got) != 2 || !strings.HasPrefix(got[0], "KEY ") || got[1] != c.want {
			t.Errorf("--history 5 --key %s: %q; want the header and %q", c.key, got, c.want)
		}
	}
	if got := lines("dump", "--history", "5", "--key", withHistory, root); len(got) != 6 || strings.Contains(strings.Join(got, "\n"), "note ") {
		t.Errorf("--history 5 --key %s: %q; want the header and 5 entries, no note", withHistory, got)
	}
	if got := strings.Join(lines("dump", "--history", "1", root), "\n"); strings.Contains(got, "note ") || strings.Contains(got, legacy) {
		t.Errorf("--history 1 on the root: %q; want no note, no line for the legacy key", got)
	}
	// Migrated, the key has a meta.db and no entry yet.
	if code, _, errs := runCLI(t, "migrate", root); code != exitOK {
		t.Fatalf("migrate: exit %d, stderr %q", code, errs)
	}
	if got := lines("dump", "--history", "5", "--key", legacy, root); len(got) != 2 || got[1] != "note "+legacy+": no history entries" {
		t.Errorf("--history 5 --key %s, migrated: %q; want the header and its note", legacy, got)
	}
}
