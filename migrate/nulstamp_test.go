package migrate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sessdb/store"
)

// A legacy venue or pi-version stamp holding a NUL byte ("local\x00": the
// legacy reader's trim keeps it) is carried as is, and the report says
// what it means: no CLI job's --venue or --pi-version can hold the byte,
// so the key stays cold for them. Before, the value went into meta.db
// with no oddity line, where "" and "(pending)", which match no venue
// either, each have one.
func TestAStampWithANULByteIsCarriedWithAnOddity(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "acme/widget", "nul stamp")
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	for n, b := range map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
		"venue":         "local\x00", "pi-version": "0.58.3\x00\n",
	} {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
	}
	for _, dry := range []bool{true, false} {
		opts := testOpts()
		opts.DryRun = dry
		got, _ := migrate(t, root, false, opts)
		r := got[key]
		if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "local\x00" || r.Values.PiVersion != "0.58.3\x00" {
			t.Fatalf("dry run %v: %+v; want migrated, the stamps carried as is", dry, r)
		}
		for _, file := range []string{"venue", "pi-version"} {
			found := false
			for _, o := range r.Oddities {
				found = found || o.File == file && strings.Contains(o.ReadAs, "NUL byte")
			}
			if !found {
				t.Errorf("dry run %v: oddities %+v; want %s's NUL byte named", dry, r.Oddities, file)
			}
		}
	}
}

// A stamp holding a NUL byte whose value is not its file's bytes (a
// newline trimmed, invalid UTF-8 decoded as U+FFFD) has an oddity line
// that shows the value carried and says how it was read, as any other
// stamp's does: not "carried as is". Before (8e401f5), the NUL byte's line
// replaced the "(trimmed)" or "(invalid UTF-8 …)" one, and said the
// value was carried as is where it was not.
func TestAStampWithANULByteSaysHowItWasReshaped(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "acme/widget", "nul stamp reshaped")
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	for n, b := range map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
		"venue":         "lo\xffcal\x00", "pi-version": "0.58.3\x00\n",
	} {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
	}
	got, _ := migrate(t, root, false, testOpts())
	r := got[key]
	if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "lo\uFFFDcal\x00" || r.Values.PiVersion != "0.58.3\x00" {
		t.Fatalf("%+v; want migrated, the venue decoded, the pi-version trimmed", r)
	}
	want := map[string]string{
		"venue":      strconv.Quote("lo\uFFFDcal\x00") + " (invalid UTF-8 decoded as U+FFFD, as Node did): it holds a NUL byte",
		"pi-version": strconv.Quote("0.58.3\x00") + " (trimmed): it holds a NUL byte",
	}
	for file, w := range want {
		found := false
		for _, o := range r.Oddities {
			found = found || o.File == file && strings.HasPrefix(o.ReadAs, w)
		}
		if !found {
			t.Errorf("oddities %+v; want %s's read as %s…", r.Oddities, file, w)
		}
	}
}
