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
