package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sessdb/store"
)

// ToDBContext and ToLegacyContext take a nil ctx as context.Background(),
// as ToDB and ToLegacy pass it: the run is whole, and nothing panics.
// Before, the walk's dispatcher panicked in its goroutine, a crash the
// caller cannot recover.
func TestMigrationsTakeANilContext(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, store.Key("github", "acme/widget", "1")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var none context.Context
	for name, run := range map[string]func(context.Context, string, Options, func(Report) error) (Summary, error){
		"to-db": ToDBContext, "to-legacy": ToLegacyContext,
	} {
		sum, err := run(none, root, testOpts(), func(Report) error { return nil })
		if err != nil || sum.Interrupted || sum.Entries != 2 {
			t.Errorf("%s: %+v, %v; want both entries, not interrupted", name, sum, err)
		}
	}
}

// A nil visit is no callback: the run migrates as with one and its summary
// counts every entry. It panicked (a nil function called in the walk's
// dispatcher, which no recover of the caller's catches).
func TestMigrationsTakeANilVisit(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "acme/widget", "1")
	if err := os.Mkdir(filepath.Join(root, key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, key, "current.jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := ToDB(root, testOpts(), nil)
	if err != nil || sum.Entries != 1 || sum.Migrated != 1 {
		t.Fatalf("to-db with a nil visit: %+v, %v; want the key migrated", sum, err)
	}
	if _, err := os.Stat(filepath.Join(root, key, "meta.db")); err != nil {
		t.Fatalf("to-db with a nil visit made no meta.db: %v", err)
	}
	sum, err = ToLegacy(root, testOpts(), nil)
	if err != nil || sum.Entries != 1 || sum.Migrated != 1 {
		t.Fatalf("to-legacy with a nil visit: %+v, %v; want the key migrated back", sum, err)
	}
}
