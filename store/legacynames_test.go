package store

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

// A name that merely ends ".incoming" is not the legacy writer's: it named
// its temps current.jsonl.<pid>.<n>.incoming (once current.jsonl.incoming)
// and <sidecar>.incoming, nothing else. check and reap took any
// *.incoming for a legacy file, so reap removed an expired key holding
// notes.incoming (a file not the store's, which must leave the key whole),
// and check called it legacy (beside a meta.db, a legacy-beside-db notice
// that no migrate ever clears, since migrate leaves what is not the
// writer's).
func TestReapLeavesAKeyHoldingAnIncomingNotTheLegacyWritersWhole(t *testing.T) {
	for _, name := range []string{"notes.incoming", "current.jsonl.bak.incoming", "lock.incoming"} {
		for _, layout := range []string{"meta.db", "legacy"} {
			t.Run(name+" "+layout, func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
				if layout == "legacy" {
					old := clock.now.Add(-30 * 24 * time.Hour)
					writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(old, "legacy turn")), "pi-version": testPi})
					if err := os.Chtimes(filepath.Join(root, testKey, TranscriptName), old, old); err != nil {
						t.Fatal(err)
					}
				} else {
					expiredKey(t, s, clock, testKey)
				}
				if err := os.WriteFile(filepath.Join(root, testKey, name), []byte("mine"), 0o600); err != nil {
					t.Fatal(err)
				}
				before := treeState(t, root)
				for _, dry := range []bool{true, false} {
					res, err := s.Reap(dry)
					why := res.Skipped[testKey]
					if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Refused, []string{testKey}) ||
						!strings.Contains(why, `"`+name+`" is a regular file`) || !strings.Contains(why, "nothing was removed") {
						t.Fatalf("reap (dry run %v) of an expired key holding %s = %+v, %v; want the key refused, naming it", dry, name, res, err)
					}
					if got := treeState(t, root); got != before {
						t.Fatalf("reap (dry run %v) changed the key it refused:\n%s\nwas\n%s", dry, got, before)
					}
				}
			})
		}
	}
}

// The legacy writer's own temps are the store's: an expired key holding
// them is reaped, temps and all (what a killed legacy worker left is no
// reason to keep a key forever).
func TestReapRemovesAnExpiredKeyHoldingTheLegacyWritersTemps(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	old := clock.now.Add(-30 * 24 * time.Hour)
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName:                      string(transcriptBytes(old, "legacy turn")),
		"pi-version":                        testPi,
		"current.jsonl.4242.0.incoming":     "half a transcript",
		"current.jsonl.incoming":            "half a transcript",
		"venue.incoming":                    "podman",
		"pi-version.incoming":               testPi,
		"resume-chain.incoming":             "3",
		"context.incoming":                  "1 2",
		"current.jsonl.31337.1207.incoming": "",
	})
	if err := os.Chtimes(filepath.Join(root, testKey, TranscriptName), old, old); err != nil {
		t.Fatal(err)
	}
	res, err := s.Reap(false)
	if err != nil || !slices.Equal(res.Removed, []string{testKey}) || len(res.Refused) != 0 {
		t.Fatalf("reap of an expired legacy key holding its writer's temps = %+v, %v; want it removed", res, err)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the key dir after the reap: %v", err)
	}
}

// check reports a *.incoming that is not the legacy writer's as what it
// is, a file the store does not write, never as a legacy file: beside a
// meta.db it is no legacy-beside-db (which migrate would never clear),
// while the writer's own temps still are.
func TestCheckReportsAnIncomingNotTheLegacyWritersAsUnknown(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	dbKey := chkKey(t, s, "incoming")
	legacyKey := Key("github", "legacy/incoming", "x")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy")), "pi-version": testPi})
	for _, key := range []string{dbKey, legacyKey} {
		for _, n := range []string{"x.incoming", "current.jsonl.bak.incoming"} {
			if err := os.WriteFile(filepath.Join(root, key, n), []byte("z"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	found, _ := chkRun(t, s, false)
	for _, key := range []string{dbKey, legacyKey} {
		for _, n := range []string{"x.incoming", "current.jsonl.bak.incoming"} {
			if chkFind(found, key+"/"+n, KindUnknownEntry) == nil {
				t.Errorf("check: no unknown-entry for %s/%s; found %+v", key, n, found)
			}
		}
	}
	if f := chkFind(found, dbKey, KindLegacyBesideDB); f != nil {
		t.Errorf("check calls a name that is not the legacy writer's legacy: %+v", *f)
	}

	// The writer's own temp beside meta.db is still legacy-beside-db, and
	// the notice names it alone.
	if err := os.WriteFile(filepath.Join(root, dbKey, "venue.incoming"), []byte("podman"), 0o600); err != nil {
		t.Fatal(err)
	}
	found, _ = chkRun(t, s, false)
	f := chkFind(found, dbKey, KindLegacyBesideDB)
	if f == nil || !strings.HasSuffix(f.Detail, ": venue.incoming") {
		t.Fatalf("check of a meta.db key holding venue.incoming: %+v; want legacy-beside-db naming venue.incoming alone", found)
	}
}

// In a key still in the legacy layout, the legacy lock and the legacy
// writer's temps are what a legacy worker leaves, promoting the key now
// or dead: check names each, a notice that tells a fresh lock (migrate
// skips the key, locked) from a stale one (migrate removes it), and
// --repair leaves them, as migrate's to take. Before, check said nothing
// of them: an operator about to migrate met a key skipped as locked, and
// temps as large as a transcript, with no word from check.
func TestCheckNamesTheLegacyLockAndTempsOfALegacyKey(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	fresh := Key("github", "legacy/leftover", "fresh lock")
	hour := Key("github", "legacy/leftover", "a lock an hour old")
	stale := Key("github", "legacy/leftover", "stale lock")
	past := Key("github", "legacy/leftover", "a lock just past the hour")
	temps := map[string]string{"current.jsonl.4242.0.incoming": "half a transcript", "venue.incoming": "podman"}
	for _, key := range []string{fresh, hour, stale, past} {
		files := map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy")), "pi-version": testPi, "lock": ""}
		if key == stale {
			maps.Copy(files, temps)
		}
		writeLegacy(t, root, key, files)
	}
	at := func(key, n string, ago time.Duration) {
		t.Helper()
		when := clock.now.Add(-ago)
		if err := os.Chtimes(filepath.Join(root, key, n), when, when); err != nil {
			t.Fatal(err)
		}
	}
	at(fresh, "lock", 10*time.Minute)
	at(hour, "lock", time.Hour) // fresh still, as migrate has it (locked)
	at(stale, "lock", 3*time.Hour)
	at(past, "lock", time.Hour+time.Minute) // stale, as migrate has it (removed)
	for n := range temps {
		at(stale, n, 2*time.Hour)
	}
	before := treeState(t, root)
	for _, repair := range []bool{false, true} {
		found, _ := chkRun(t, s, repair)
		want := map[string]string{
			fresh + "/lock":                          "promotion lock, 10m old: a legacy worker is promoting the key now",
			hour + "/lock":                           "promotion lock, 1h old: a legacy worker is promoting the key now",
			stale + "/lock":                          "promotion lock, 3h old: stale",
			past + "/lock":                           "old: stale (over an hour)",
			stale + "/current.jsonl.4242.0.incoming": "a legacy writer's temp, 2h old",
			stale + "/venue.incoming":                "a legacy writer's temp, 2h old",
		}
		for path, says := range want {
			f := chkFind(found, path, KindLegacyLeftover)
			switch {
			case f == nil:
				t.Errorf("check (repair %v): no legacy-leftover for %s; found %+v", repair, path, found)
			case f.Severity != SeverityNotice || !strings.Contains(f.Detail, says) || f.Repaired || f.Repair != "":
				t.Errorf("check (repair %v) of %s: %+v; want a notice saying %q, no repair said or done (json: null)", repair, path, *f, says)
			}
		}
		for _, f := range found {
			if f.Kind == KindLegacyLeftover && want[f.Path] == "" {
				t.Errorf("check (repair %v) named a sidecar or the transcript a leftover: %+v", repair, f)
			}
		}
		if got := treeState(t, root); got != before {
			t.Fatalf("check (repair %v) changed the legacy keys:\n%s\nwas\n%s", repair, got, before)
		}
	}
}
