package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sessions root that is a link of another name to a key dir
// (PI_SESSIONS_DIR=/srv/current, current -> sessions/<key>, a link an
// operator made to look at one conversation) is the key dir set one level
// too deep under another name: every key absent there, and promote making
// key dirs inside that key's dir. It is refused as the key dir itself is,
// exit 2, naming the setting, the file that makes it a key dir, and the
// directory the link leads to; the key dir is left as it was. A link to
// a real root is a root as before.
func TestASessionsRootLinkedToAKeyDirIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey = "4668107cac2e99b44415c5606b32ef14"
	links := t.TempDir()
	toKey, toRoot := filepath.Join(links, "current"), filepath.Join(links, "sessions")
	if err := os.Symlink(filepath.Join(root, dbKey), toKey); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, toRoot); err != nil {
		t.Fatal(err)
	}
	before := treeNames(root)
	job := filepath.Join(t.TempDir(), "job")
	for _, args := range [][]string{
		{"stats", "--json"},
		{"resolve", "--key", "9ddb56ddcfac930962d0f4d375d2fd07", "--job-dir", job, "--pi-version", "0.58.3"},
	} {
		t.Setenv("PI_SESSIONS_DIR", toKey)
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "meta.db") || !strings.Contains(errs, filepath.Join(root, dbKey)) || !strings.Contains(errs, "its parent, "+quoteName(root)+"?") {
			t.Errorf("PI_SESSIONS_DIR=%s (a link to a key dir) %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming the setting, meta.db and the key dir the link leads to", toKey, args, code, out, errs)
		}
	}
	if after := treeNames(root); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("the sessions root changed: %q, was %q", after, before)
	}
	if _, err := os.Lstat(job); err == nil {
		t.Errorf("a refused resolve made the job dir")
	}
	t.Setenv("PI_SESSIONS_DIR", toRoot)
	if code, _, errs := runCLI(t, "stats", "--json"); code != exitOK {
		t.Errorf("stats through a link to the sample root: exit %d, stderr %q", code, errs)
	}
}

// A link that bears the key's own name, in a directory of links
// (/srv/links/<key> -> sessions/<key>), is refused the same, and the
// directory it names as the sessions root is the one the link leads into,
// not the directory of links: that one holds no key dir (the store never
// follows a key dir that is a link), and named as the root it would show
// every key as a link. Before, the refusal said "its parent, /srv/links?".
func TestALinkNamedAsItsKeyNamesTheRootItLeadsInto(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey = "4668107cac2e99b44415c5606b32ef14"
	links := t.TempDir()
	link := filepath.Join(links, dbKey)
	if err := os.Symlink(filepath.Join(root, dbKey), link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_DIR", link)
	code, out, errs := runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "its parent, "+quoteName(root)+"?") {
		t.Errorf("PI_SESSIONS_DIR=%s (a link named as its key): exit %d, stdout %q, stderr %q; want exit 2, naming %s as the parent", link, code, out, errs, root)
	}
	// A key dir reached through a link above it (the root's own path a
	// link) is named under the path given.
	toRoot := filepath.Join(links, "sessions")
	if err := os.Symlink(root, toRoot); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_DIR", filepath.Join(toRoot, dbKey))
	code, out, errs = runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, "its parent, "+quoteName(toRoot)+"?") {
		t.Errorf("PI_SESSIONS_DIR=%s/%s: exit %d, stdout %q, stderr %q; want exit 2, naming %s as the parent", toRoot, dbKey, code, out, errs, toRoot)
	}
}

// A root named through a link and "..", where the link leads into a key
// dir (PI_SESSIONS_DIR=/srv/peek/.., peek -> sessions/<key>/look), is that
// key dir to the kernel, which goes to the parent of the link's target;
// dropping "peek/.." by its letters took /srv for the root. It is refused
// as the key dir itself is, naming the directory the path leads to.
func TestARootWhoseDotDotFollowsALinkIntoAKeyDirIsRefused(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	const dbKey = "4668107cac2e99b44415c5606b32ef14"
	look := filepath.Join(root, dbKey, "look")
	if err := os.Mkdir(look, 0o700); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	peek := filepath.Join(links, "peek")
	if err := os.Symlink(look, peek); err != nil {
		t.Fatal(err)
	}
	given := peek + "/.."
	t.Setenv("PI_SESSIONS_DIR", given)
	code, out, errs := runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "is a key dir") || !strings.Contains(errs, filepath.Join(root, dbKey)) || !strings.Contains(errs, "its parent, "+quoteName(root)+"?") {
		t.Errorf("PI_SESSIONS_DIR=%s (the parent of a link's target inside a key dir): exit %d, stdout %q, stderr %q; want exit 2, naming the key dir and %s as the parent", given, code, out, errs, root)
	}
}
