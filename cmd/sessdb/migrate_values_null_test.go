package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// migrate's `values` on a root are a key's read to be converted: a key already
// in meta.db (`already`) and a name skipped have null, where --to etcd
// gives an `already` key its values. docs/json.md said only what the
// values are, so a worker reading values of every report met null for
// an `already` key on a root and an object for the same key's `already`
// into a fleet.
func TestMigrateValuesAreNullOnARootForAKeyNotConverted(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	legacy := store.Key("github", "acme/values", "pi/legacy")
	converted := store.Key("github", "acme/values", "pi/db")
	keyDir := func(k string) {
		dir := filepath.Join(root, k)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	values := func(t *testing.T, args ...string) map[string]string {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d, %s", strings.Join(args, " "), code, errs)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var r struct {
				Key    *string
				Action string
				Values *json.RawMessage
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("migrate line %q: %v", line, err)
			}
			if r.Key != nil {
				got[*r.Key] = r.Action + " " + map[bool]string{true: "null", false: "values"}[r.Values == nil]
			}
		}
		return got
	}
	// One key into meta.db first: the run after finds it already there.
	keyDir(converted)
	if code, _, errs := runCLI(t, "migrate", "--json", root); code != exitOK {
		t.Fatalf("migrate: %s", errs)
	}
	keyDir(legacy)
	os.Mkdir(filepath.Join(root, "not-a-key"), 0o700)
	got := values(t, "migrate", "--json", "--dry-run", root)
	for k, want := range map[string]string{legacy: "migrate values", converted: "already null", "not-a-key": "skip null"} {
		if got[k] != want {
			t.Errorf("to meta.db, %s: %q, want %q", k, got[k], want)
		}
	}
	startFleet(t)
	os.RemoveAll(filepath.Join(root, legacy)) // --to etcd takes meta.db's keys only
	if code, _, errs := runCLI(t, "migrate", "--json", "--to", "etcd", root); code != exitOK {
		t.Fatalf("migrate --to etcd: exit %d, %s", code, errs)
	}
	got = values(t, "migrate", "--json", "--to", "etcd", "--dry-run", root)
	if got[converted] != "already values" {
		t.Errorf("--to etcd, a key the fleet holds: %q, want already values", got[converted])
	}
	docSays(t, "json.md", "on a root, null for `already`, `skip` and `locked`, and for a `failed` key whose values were not read (a key converted, or failing once they were read, has them; `--to-legacy` of a key whose meta.db is empty, only removed, has none); `--to etcd` and `--from etcd` give them for every key they could read, whatever its action (`already` and `conflict` included)")
}
