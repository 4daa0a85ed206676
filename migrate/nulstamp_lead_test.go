package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A stamp whose NUL byte is its first ("\x00local") is carried with the
// same oddity line as one whose NUL byte comes later: the byte is
// anywhere in the value. TestAStampWithANULByteIsCarriedWithAnOddity's
// stamps end in it, so a search that began at the second byte (mutants
// M22, M23: IndexByte > 0) passed it.
func TestAStampThatBeginsWithANULByteIsCarriedWithAnOddity(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "acme/widget", "leading nul stamp")
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	for n, b := range map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
		"venue":         "\x00local", "pi-version": "\x000.58.3\n",
	} {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
	}
	opts := testOpts()
	opts.DryRun = true
	got, _ := migrate(t, root, false, opts)
	r := got[key]
	if r.Action != Migrated || r.Values == nil || r.Values.Venue == nil || *r.Values.Venue != "\x00local" || r.Values.PiVersion != "\x000.58.3" {
		t.Fatalf("%+v; want migrated, the stamps carried as is", r)
	}
	for _, file := range []string{"venue", "pi-version"} {
		found := false
		for _, o := range r.Oddities {
			found = found || o.File == file && strings.Contains(o.ReadAs, "NUL byte")
		}
		if !found {
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
	root := t.TempDir()
	key := store.Key("github", "acme/widget", "nul context model")
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	for n, b := range map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
		"venue":         "local", "pi-version": "0.58.3", "context": "100 200 openai/gpt\x00x",
	} {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
	}
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
