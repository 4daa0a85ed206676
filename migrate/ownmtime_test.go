package migrate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// A legacy-layout ticket's base is its transcript's identity: device,
// inode, size and mtime. A transcript changed in place with its size
// kept (damage: sessdb never writes one in place) is told from the
// ticket's by its mtime alone. The rollback gave every transcript its
// record's promotion date, a changed one too, and so made it the ticket's
// base again: after it and a migrate back, a job resolved before the
// change promoted its run over the changed transcript, where it must be
// superseded (the reference model's seed 30035). A transcript that does
// not match its record keeps its own mtime.
func TestRollbackLeavesATranscriptChangedInPlaceItsOwnMtime(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	now := testNow
	st, err := store.New(root, store.Options{Now: func() time.Time { return now }})
	must(t, err)
	key := store.Key("github", "acme/widget", "pi/issue-1")
	job := store.Job{PiVersion: testPi, Venue: "local"}
	promote := func(sess store.Session, jobDir string) store.PromoteResult {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(jobDir, "session", "current.jsonl"), []byte(transcriptBytes(now)), 0o600))
		res, err := st.Promote(sess, store.PromoteRequest{PiVersion: testPi})
		must(t, err)
		return res
	}
	jobDir := t.TempDir()
	sess, err := st.Resolve(key, job, jobDir)
	must(t, err)
	if res := promote(sess, jobDir); !res.Promoted {
		t.Fatalf("the first promotion: %+v", res)
	}
	migrate(t, root, true, testOpts())

	// A job resolved on the legacy layout, cold (another venue): its
	// ticket's base is the transcript file's identity.
	now = now.Add(time.Hour)
	staleDir := t.TempDir()
	stale, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "elsewhere"}, staleDir)
	must(t, err)
	if stale.Resume || stale.Reason != gates.VenueChanged {
		t.Fatalf("the stale job's resolve: %v %s", stale.Resume, stale.Reason)
	}

	migrate(t, root, false, testOpts())
	p := filepath.Join(root, key, "current.jsonl")
	data, err := os.ReadFile(p)
	must(t, err)
	data[len(data)-5] ^= 0x20
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(data, 0) // in place: its inode and size kept
	must(t, err)
	must(t, f.Close())
	changed := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	must(t, os.Chtimes(p, changed, changed))

	migrate(t, root, true, testOpts())
	fi, err := os.Stat(p)
	must(t, err)
	if !fi.ModTime().Equal(changed) {
		t.Errorf("the rollback set the changed transcript's mtime to %v; want its own, %v", fi.ModTime(), changed)
	}
	migrate(t, root, false, testOpts())

	if res := promote(stale, staleDir); res.Promoted || res.Reason != gates.Superseded {
		t.Errorf("the stale job's run over the transcript changed since its resolve: %+v; want superseded", res)
	}
}
