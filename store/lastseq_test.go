package store

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

// A key whose history's newest entry holds the last sequence number
// (2^64-1: a history begun at a generation that high, by damage or a
// hostile file) takes no write: every promotion, refusal and reap must
// append an entry after it. The promote's error says why and what settles
// it, and check reports it (record-undecodable: --repair moves meta.db
// aside, then check --repair --accept starts the key afresh). check said
// nothing, and the promote's error only "no sequence number follows it".
func TestAHistoryAtTheLastSequenceNumberIsReported(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(filepath.Join(root, testKey), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(tx *db.Tx) error {
		// In an empty history an entry's key is its generation.
		if _, err := tx.AppendHistory(db.HistoryEntry{Gen: math.MaxUint64 - 1, Outcome: string(gates.Superseded)}); err != nil {
			return err
		}
		if _, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, Outcome: string(gates.Superseded)}); err != nil {
			return err
		}
		if err := tx.PutVenue("local"); err != nil {
			return err
		}
		return tx.PutPiVersion(testPi)
	})
	d.Close()
	if err != nil {
		t.Fatal(err)
	}

	sess, dir, data := contractJob(t, s, testKey, "last")
	stage(t, dir, answeredTurn(data, "last", 10))
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err == nil || res.Reason != gates.PromoteFailed || !strings.Contains(err.Error(), "ffffffffffffffff: the last sequence number") || !strings.Contains(err.Error(), "check --repair") {
		t.Fatalf("promote = %+v, %v; want promote-failed, naming the last sequence number and what settles it", res, err)
	}
	found, _ := chkRun(t, s, false)
	f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable)
	if f == nil || !strings.Contains(f.Detail, "the last sequence number") {
		t.Fatalf("check: %+v; want meta.db record-undecodable, naming the last sequence number", found)
	}
	found, _ = chkRun(t, s, true)
	if f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable); f == nil || !f.Repaired {
		t.Fatalf("check --repair: %+v; want meta.db moved aside", found)
	}
	if aside, err := filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*")); err != nil || len(aside) != 1 {
		t.Fatalf("after the repair the key dir holds %v (%v); want meta.db moved aside", aside, err)
	}
}
