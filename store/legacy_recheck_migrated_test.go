package store

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// The legacy store's venue re-check compared the stamp read again after
// the copy with the job's venue, an absent stamp read as "local"
// (legacy-store.md §2.2 step 6, readVenue(key) !== venue). A migration
// that lands under a resolve's copy of a legacy key commits meta.db with
// the key's values and then removes the legacy files, the venue last:
// the transcript is untouched, and a local job's stamp still reads as
// "local" once the file is gone. The re-check compared the two reads as
// stamps instead, so "local" then gone was venue-changed: the conversation
// cold-started, its ticket still based on the file in place, and the
// job's cold run was then promoted over the conversation. And a key with
// no venue stamp that one then says "local" (the same venue) is no
// change either.
func TestALegacyVenueReadAgainAsTheSameVenueStillResumes(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	body := transcriptBytes(clock.now, "legacy turn")
	for _, c := range []struct {
		name  string
		venue string // the legacy venue file, "" for none
		land  func(t *testing.T, dir string)
		want  gates.Reason
	}{
		{"a migration landed under the copy: local's stamp removed", "local", func(t *testing.T, dir string) {
			migrateUnder(t, dir, body, clock.now.UnixNano(), "local")
		}, gates.Resumed},
		{"an unstamped key stamped local under the copy", "", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "venue"), "local")
		}, gates.Resumed},
		{"a local stamp that another venue's replaced under the copy", "local", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "venue"), "podman")
		}, gates.VenueChanged},
		{"an unstamped key whose stamp became unreadable under the copy", "", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "venue"), "")
		}, gates.VenueChanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := Key("github", "legacy/recheck-same", c.name)
			files := map[string]string{TranscriptName: string(body), "pi-version": testPi, "resume-chain": "2"}
			if c.venue != "" {
				files["venue"] = c.venue
			}
			writeLegacy(t, root, key, files)
			fired := insideAt(t, faults.ResolveAfterCopy, func() error {
				c.land(t, filepath.Join(root, key))
				return nil
			})
			sess, jobDir := mustResolve(t, s, key, localJob())
			faults.Set(nil)
			if !*fired {
				t.Fatal("the resolve never reached the end of its copy")
			}
			want(t, sess, c.want == gates.Resumed, c.want)
			if c.want != gates.Resumed {
				// A venue that did change, with no migration under the
				// copy: the cold start is based on the file in place, and
				// the job's cold run promotes over it, by the legacy rules.
				stage(t, jobDir, transcriptBytes(clock.now, "a new conversation"))
				if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
					t.Fatalf("the cold run's promote = %s, want promoted: no migration landed under the copy", res.Reason)
				}
				return
			}
			// The run promotes onto the conversation it was given.
			stage(t, jobDir, append(staged(t, jobDir), transcriptBytes(clock.now, "legacy turn", "the job's turn")[len(body):]...))
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted {
				t.Fatalf("promote = %s, want promoted", res.Reason)
			}
		})
	}
}

// migrateUnder does to the legacy key dir dir what a migration does once
// it has read the key: meta.db committed with the key's values (the
// transcript body, promoted at mtime, its venue), then the legacy files
// removed, the venue last.
func migrateUnder(t *testing.T, dir string, body []byte, mtime int64, venue string) {
	t.Helper()
	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pi, chain := testPi, uint64(2)
	if err := d.Update(func(tx *db.Tx) error {
		return tx.PutSidecars(db.Sidecars{
			Transcript:  &db.Transcript{Gen: 1, Size: int64(len(body)), CRC32C: uint64(crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: mtime},
			PiVersion:   &pi,
			Venue:       &venue,
			ResumeChain: &chain,
		})
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"pi-version", "resume-chain", "venue"} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// A migration that lands under a resolve's copy of a legacy key stamped
// with another venue than "local" removes that stamp too, and the legacy
// re-check then reads "local": venue-changed, by the legacy rules. But the
// transcript is untouched, and the key's stamps are meta.db's now: the
// cold start's ticket kept the file in place as its base, so the job's
// cold run was promoted over the conversation the key still holds. Such a
// cold start has no base now: its run is superseded, and the key's
// conversation resumes for the next job of its venue.
func TestALegacyKeyMigratedUnderTheCopyIsNotReplacedByItsColdRun(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	body := transcriptBytes(clock.now, "legacy turn")
	key := Key("github", "legacy/recheck-migrated", "podman")
	writeLegacy(t, root, key, map[string]string{TranscriptName: string(body), "pi-version": testPi, "resume-chain": "2", "venue": "podman"})
	podman := localJob()
	podman.Venue = "podman"
	fired := insideAt(t, faults.ResolveAfterCopy, func() error {
		migrateUnder(t, filepath.Join(root, key), body, clock.now.UnixNano(), "podman")
		return nil
	})
	sess, jobDir := mustResolve(t, s, key, podman)
	faults.Set(nil)
	if !*fired {
		t.Fatal("the resolve never reached the end of its copy")
	}
	want(t, sess, false, gates.VenueChanged)
	stage(t, jobDir, transcriptBytes(clock.now, "a new conversation"))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded {
		t.Fatalf("the cold run's promote = {promoted %v, %s}, want superseded: it replaced the migrated conversation", res.Promoted, res.Reason)
	}
	next, jobDir := mustResolve(t, s, key, podman)
	want(t, next, true, gates.Resumed)
	if got := staged(t, jobDir); string(got) != string(body) {
		t.Fatalf("the next job was given %d bytes, want the key's %d", len(got), len(body))
	}
}
