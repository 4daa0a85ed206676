package store

import (
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
