package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// TestPowerCutDuringAPromotionOverAHardLinkedMetaDB: the sessions root
// was copied with hard links (cp -al, rsync --link-dest), so the next
// promotion's open first gives meta.db a file of its own (a copy renamed
// over it, db's ownFile). A power cut at any step of that promotion, the
// copy's included (db's writes go through the journal here), leaves the
// acknowledged "before" resumable, and "after" once the promotion
// returned; never a meta.db cut short.
func TestPowerCutDuringAPromotionOverAHardLinkedMetaDB(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	if err := os.Link(filepath.Join(root, testKey, db.FileName), filepath.Join(t.TempDir(), db.FileName)); err != nil {
		t.Fatal(err)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
	c := armCuts(t, s, root)
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	faults.Set(nil)
	c.cut(afterReturn)
	c.through(t, "at "+string(faults.DBOwnFileAfterRename), "before rename .meta.db.tmp-")
	for _, img := range c.images {
		where := fmt.Sprintf("cut %s, %s (lost %v)", img.at, img.Mode, img.Lost)
		s2 := imageStore(t, s, img)
		if _, err := s2.RollForward(testKey); err != nil {
			t.Fatalf("%s: roll-forward: %v", where, err)
		}
		want := "before"
		if img.at == afterReturn {
			want = "after"
		}
		sess, data := checkDescribed(t, s2, img.Dir, testKey)
		if got := markerOf(data, 1); !sess.Resume || got != want && (img.at == afterReturn || got != "after") {
			t.Errorf("%s: %s resolves {resume %v, %s, %q}, want it to resume %q", where, testKey, sess.Resume, sess.Reason, got, want)
		}
	}
	t.Logf("%d images checked at %d steps", len(c.images), len(c.steps))
}
