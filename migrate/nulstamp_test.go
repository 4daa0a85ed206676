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
	root, key := legacyKey(t, "nul stamp", map[string]string{"venue": "local\x00", "pi-version": "0.58.3\x00\n"})
	for _, dry := range []bool{true, false} {
		opts := testOpts()
		opts.DryRun = dry
		got, _ := migrate(t, root, false, opts)
		r := got[key]
		if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "local\x00" || r.Values.PiVersion != "0.58.3\x00" {
			t.Fatalf("dry run %v: %+v; want migrated, the stamps carried as is", dry, r)
		}
		for _, file := range []string{"venue", "pi-version"} {
			if !namesNUL(r, file) {
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
	root, key := legacyKey(t, "nul stamp reshaped", map[string]string{"venue": "lo\xffcal\x00", "pi-version": "0.58.3\x00\n"})
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

// A stamp whose NUL byte is its first ("\x00local") is carried with the
// same oddity line as one whose NUL byte comes later: the byte is
// anywhere in the value. TestAStampWithANULByteIsCarriedWithAnOddity's
// stamps end in it, so a search that began at the second byte (mutants
// M22, M23: IndexByte > 0) passed it.
func TestAStampThatBeginsWithANULByteIsCarriedWithAnOddity(t *testing.T) {
	root, key := legacyKey(t, "leading nul stamp", map[string]string{"venue": "\x00local", "pi-version": "\x000.58.3\n"})
	opts := testOpts()
	opts.DryRun = true
	got, _ := migrate(t, root, false, opts)
	r := got[key]
	if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "\x00local" || r.Values.PiVersion != "\x000.58.3" {
		t.Fatalf("%+v; want migrated, the stamps carried as is", r)
	}
	for _, file := range []string{"venue", "pi-version"} {
		if !namesNUL(r, file) {
			t.Errorf("oddities %+v; want %s's NUL byte named", r.Oddities, file)
		}
	}
}

// A context reading whose model holds a NUL byte ("100 200 m\x00x": the
// legacy reader splits on white space only) is carried as is, with an
// oddity line saying what it means, as a venue's or pi-version's NUL byte
// has one: no --model can hold the byte, so the context bound skips the
// reading for every CLI job that names a model. Before, it was carried
// with no line at all.
func TestAContextModelWithANULByteIsCarriedWithAnOddity(t *testing.T) {
	root, key := legacyKey(t, "nul context model", map[string]string{"venue": "local", "pi-version": "0.58.3", "context": "100 200 openai/gpt\x00x"})
	for _, dry := range []bool{true, false} {
		opts := testOpts()
		opts.DryRun = dry
		got, _ := migrate(t, root, false, opts)
		r := got[key]
		if r.Action != Migrated || r.Values == nil || r.Values.Context == nil || r.Values.Context.Model != "openai/gpt\x00x" {
			t.Fatalf("dry run %v: %+v; want migrated, the context's model carried as is", dry, r)
		}
		found := false
		for _, o := range r.Oddities {
			found = found || o.File == "context" && strings.Contains(o.ReadAs, "NUL byte") && strings.Contains(o.Found, `\x00`)
		}
		if !found {
			t.Errorf("dry run %v: oddities %+v; want the context model's NUL byte named", dry, r.Oddities)
		}
	}
}

// legacyKey makes, under a new root, the legacy key dir of id holding a
// one-line transcript and the sidecar files given (name to bytes).
func legacyKey(t *testing.T, id string, sidecars map[string]string) (root, key string) {
	root = t.TempDir()
	key = store.Key("github", "acme/widget", id)
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	sidecars["current.jsonl"] = `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n"
	for n, b := range sidecars {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
	}
	return root, key
}

// namesNUL reports whether r's oddities say that file's stamp holds a NUL
// byte.
func namesNUL(r Report, file string) bool {
	for _, o := range r.Oddities {
		if o.File == file && strings.Contains(o.ReadAs, "NUL byte") {
			return true
		}
	}
	return false
}
