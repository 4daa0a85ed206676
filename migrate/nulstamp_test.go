package migrate

import (
	"os"
	"path/filepath"
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
