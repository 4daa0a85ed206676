package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

// A retried promote repeats its first result while the key's history ring
// (its last db.HistoryLimit entries) still holds the ticket's promotion;
// after that it is judged as a new promotion onto a base the key no
// longer holds: superseded, even by its own generation. README and
// docs/job.md give the window.
func TestRetryRepeatsWhileTheHistoryHoldsTheTicket(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	sess, dir, data := contractJob(t, s, testKey, "retrier")
	stage(t, dir, answeredTurn(data, "R", 100))
	first := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if !first.Promoted || first.Gen != 2 {
		t.Fatalf("first: %+v", first)
	}
	// Other jobs' refusals after it, each an entry of the ring (written
	// in one commit, as Promote's refusals would write them one by one).
	refusals := func(n int) {
		t.Helper()
		kd, err := fsat.OpenDir(filepath.Join(root, testKey))
		if err != nil {
			t.Fatal(err)
		}
		defer kd.Close()
		d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		err = d.Update(func(tx *db.Tx) error {
			for i := 0; i < n; i++ {
				e := db.HistoryEntry{Gen: 2, At: s.opts.Now().UnixNano(), Outcome: string(gates.Superseded), Ticket: fmt.Sprintf("%032x", i+1), BaseGen: 1}
				if _, err := tx.AppendHistory(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	refusals(db.HistoryLimit - 1)
	if again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !again.Repeat || again.Gen != 2 {
		t.Fatalf("retry with the ticket's promotion the ring's oldest entry = %+v, want a repeat", again)
	}
	refusals(1)
	again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if again.Repeat || again.Reason != gates.Superseded || again.SupersededBy != 2 {
		t.Fatalf("retry after the ring dropped the ticket's promotion = %+v, want superseded by 2", again)
	}
}
