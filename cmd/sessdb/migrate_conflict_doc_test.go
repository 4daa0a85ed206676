package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A conflict of a fleet migration is one of three things: another
// generation on each side, the same generation (the same bytes) under
// other stamps by another root's promotion, or a destination key dir in
// the legacy layout. json.md's row of migrate's action named only the
// first (and, to --to etcd, a history with no record): a reader of a
// conflict whose two sides hold one generation found nothing there to say
// why. The row now names each, and each is a conflict, exit 1.
func TestMigrateConflictsAreAsJSONDocSays(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/conflict-doc")
	clearEnv(t)
	// Two roots, one key, the same bytes promoted by two jobs of two venues.
	roots := make([]string, 2)
	for i, venue := range []string{"local", "podman"} {
		roots[i] = filepath.Join(t.TempDir(), "sessions")
		job := t.TempDir()
		args := []string{"--sessions-dir", roots[i], "--pi-version", "0.58.3"}
		if code, out, errs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job, "--venue", venue}, args...)...); code != exitOK {
			t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
		}
		appendAnswered(t, job, "same")
		if code, out, errs := runCLI(t, append([]string{"promote", "--job-dir", job}, args...)...); code != exitOK || !strings.Contains(out, `"promoted":true`) {
			t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
		}
	}
	// A third root holds the key in the legacy layout.
	legacy := filepath.Join(t.TempDir(), "sessions")
	if err := os.MkdirAll(filepath.Join(legacy, key), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(roots[0], key, store.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(legacy, key, store.TranscriptName), b, 0o600); err != nil {
		t.Fatal(err)
	}

	startFleet(t)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", roots[0]); sum.Migrated != 1 {
		t.Fatalf("--to etcd of the first root = %+v, want 1 migrated", sum)
	}
	action := func(args ...string) (string, string) {
		t.Helper()
		code, out, errs := runCLI(t, args...)
		var r struct{ Action, Cause string }
		if code != exitFault || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &r) != nil {
			t.Fatalf("%q: exit %d, want 1\n%s%s", args, code, out, errs)
		}
		return r.Action, r.Cause
	}
	for _, args := range [][]string{
		{"migrate", "--to", "etcd", "--json", roots[1]},
		{"migrate", "--from", "etcd", "--json", roots[1]},
	} {
		if a, c := action(args...); a != "conflict" || !strings.Contains(c, "the same bytes") || !strings.Contains(c, `venue "local" in etcd, "podman" in the key dir`) {
			t.Errorf("%q: %s (%s); want a conflict naming the venues", args, a, c)
		}
	}
	if a, c := action("migrate", "--from", "etcd", "--json", legacy); a != "conflict" || !strings.Contains(c, "legacy layout") {
		t.Errorf("--from etcd into a legacy key dir: %s (%s); want a conflict", a, c)
	}

	docSays(t, "json.md", "`conflict` (`--to etcd`, `--from etcd`: the destination holds another generation, and etcd's does not descend from the key dir's; or the same generation, the same bytes under other stamps, promoted on another root; or, to `--from etcd`, a key dir in the legacy layout; or, to `--to etcd`, etcd holds the key's history and no record; left alone, exit 1)")
}
