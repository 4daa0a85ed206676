package db

import "testing"

// PutTranscript refuses a generation below one the file records, as its
// doc says, not the one it records: putting the current generation again
// goes through, against both sidecars/transcript and the newest history
// entry, and a lower one is still refused (mutation sweep:
// notBack's `cur.Gen > gen` and `e.Gen > gen` made `>=`, which refused the
// same generation as going back; no test put it twice).
func TestPutTranscriptTakesTheSameGenerationAgain(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	put := func(gen uint64) error {
		return d.Update(func(tx *Tx) error {
			if err := tx.PutTranscript(Transcript{Gen: gen, Size: 10, CRC32C: 7}); err != nil {
				return err
			}
			return appended(tx.AppendHistory(HistoryEntry{Gen: gen, Reason: "resumed"}))
		})
	}
	if err := put(3); err != nil {
		t.Fatal(err)
	}
	if err := put(3); err != nil {
		t.Fatalf("the same generation again: %v", err)
	}
	// Only the history remembers it: sidecars/transcript deleted.
	if err := d.Update(func(tx *Tx) error { return tx.putSidecar(keyTranscript, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(tx *Tx) error { return tx.PutTranscript(Transcript{Gen: 3, Size: 10, CRC32C: 7}) }); err != nil {
		t.Fatalf("the history's generation again: %v", err)
	}
	wantErr(t, put(2), ErrDamaged)
}
