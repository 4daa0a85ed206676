package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A legacy key is not locked: a legacy worker's promotion can land
// between the gate and the copy. The legacy store's two re-checks after
// the copy are its contract (legacy-store.md §2.2 step 6, its tests 47,
// 59, 60 and 61): the venue first, then the file's identity
// (dev:ino:size:mtime), each a cold start that stages nothing; a
// transcript untouched meanwhile still resumes.
func TestALegacyPromotionBetweenTheGateAndTheCopyIsCaughtVenueFirst(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	body := transcriptBytes(clock.now, "legacy turn")
	for _, c := range []struct {
		name string
		land func(t *testing.T, dir string) // what lands between the gate and the copy
		want gates.Reason
	}{
		{"untouched (legacy 60)", func(*testing.T, string) {}, gates.Resumed},
		{"another venue's promotion under way, its sentinel written (legacy 47)", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "venue"), "(pending)")
		}, gates.VenueChanged},
		{"another venue's promotion landed, transcript and stamp (legacy 61): the venue names itself first", func(t *testing.T, dir string) {
			renameOver(t, dir, transcriptBytes(clock.now, "legacy turn", "podman's turn"), nil)
			write(t, filepath.Join(dir, "venue"), "podman")
		}, gates.VenueChanged},
		{"the same venue's promotion of the same bytes and mtime, renamed over (legacy 59)", func(t *testing.T, dir string) {
			st, err := os.Stat(filepath.Join(dir, TranscriptName))
			if err != nil {
				t.Fatal(err)
			}
			renameOver(t, dir, body, st)
		}, gates.TranscriptReplaced},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := Key("github", "legacy/recheck", c.name)
			writeLegacy(t, root, key, map[string]string{TranscriptName: string(body), "pi-version": testPi})
			fired := insideAt(t, faults.ResolveAfterGates, func() error {
				c.land(t, filepath.Join(root, key))
				return nil
			})
			sess, jobDir := mustResolve(t, s, key, localJob())
			faults.Set(nil)
			if !*fired {
				t.Fatal("the resolve never reached its gates' end")
			}
			want(t, sess, c.want == gates.Resumed, c.want)
			if got := staged(t, jobDir); c.want == gates.Resumed && string(got) != string(body) {
				t.Fatalf("staged %d bytes, want the %d judged", len(got), len(body))
			}
		})
	}
}

// write replaces name with data.
func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// renameOver lands data as dir's transcript the legacy writer's way, a
// temp renamed over it; with like, the temp takes like's mtime first, so
// only its inode tells it from the file it replaces.
func renameOver(t *testing.T, dir string, data []byte, like os.FileInfo) {
	t.Helper()
	tmp := filepath.Join(dir, TranscriptName+".1.0.incoming")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if like != nil {
		if err := os.Chtimes(tmp, like.ModTime(), like.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(dir, TranscriptName)); err != nil {
		t.Fatal(err)
	}
}
