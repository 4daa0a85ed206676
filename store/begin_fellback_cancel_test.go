package store

import (
	"context"
	"errors"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A writer on a key one of whose meta pages is invalid reads the
// transcript in place whole, to tell whether the valid page describes it
// (fellBack): BeginContext stopped as that read begins ends with ctx's
// error, the key as it was. Given context.Background() (mutnew50's N12),
// the read went on to the file's end and the writer was had, nil error.
func TestABeginStoppedAsItReadsTheTranscriptForAnInvalidMetaPageEndsThere(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	b, ok := s.backend.(keyDirs)
	if !ok {
		t.Fatalf("backend %T; want keyDirs", s.backend)
	}
	key := chkKey(t, s, "spare")
	m := chkMeta(t, root, key)
	writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtBaseRead(t, cancel)
	txn, err := b.BeginContext(ctx, key, Base{})
	faults.Set(nil)
	if err == nil {
		txn.Close()
	}
	if *reads != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("BeginContext stopped as it read the transcript for the invalid meta page (%d reads): %v; want context.Canceled", *reads, err)
	}
	if m := chkMeta(t, root, key); m.Pages[0].Valid() == m.Pages[1].Valid() {
		t.Fatalf("meta pages after the stopped writer %+v; want one still invalid", m.Pages)
	}
}
