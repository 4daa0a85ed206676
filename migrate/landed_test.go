package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A key promoted through the store keeps the landed promotion's pending
// entry until the next writer replaces it (its temp is gone, so it is
// settled). The rollback must see it as settled: no roll-forward, no
// "pending promotion" oddity, and the transcript's record honoured.
func TestToLegacyAfterLandedPromotions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	st, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("ab", 16)
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "m"}
	line := `{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n"
	for i := range 2 {
		jobDir := t.TempDir()
		sess, err := st.Resolve(key, job, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		data := line + strings.Repeat(`{"type":"message"}`+"\n", i+1)
		if err := os.WriteFile(filepath.Join(jobDir, "session", "current.jsonl"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: job.PiVersion}); err != nil || !res.Promoted {
			t.Fatalf("promote %d: %+v %v", i, res, err)
		}
	}
	var reports []Report
	if _, err := ToLegacy(root, Options{}, func(r Report) error { reports = append(reports, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Action != Migrated {
		t.Fatalf("reports %+v, want one key migrated", reports)
	}
	for _, o := range reports[0].Oddities {
		t.Errorf("oddity on a key whose promotions all landed: %+v", o)
	}
	sess, err := st.Resolve(key, job, t.TempDir())
	if err != nil || !sess.Resume {
		t.Fatalf("after the rollback the key resolves %+v, %v; want resumed", sess, err)
	}
}
