package etcdmeta

import (
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
)

// Two tries of one append (a hedged refusal sent again while its first
// try is still in flight) that both took their guess of the slot before
// either landed race for that one slot: the try that loses it finds its
// own entry there, and that is its append (AppendHistory's doc: "an
// append that finds an entry equal to e among the key's newest is that
// append: it lands nothing, whenever it takes its guess"). The entry is
// in the history once. Both tries' read of the key comes first, so the
// loser's read found nothing: only the lost compare's state can tell.
func TestTwoTriesOfOneAppendOnOneGuessLandOnce(t *testing.T) {
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	e := HistoryEntry{Gen: 1, At: time.Now().UnixNano(), Outcome: "superseded", Job: "job-one-guess", Ticket: randHex(16)}
	left, done := faults.Line(faults.EtcdWriteAfterGuess, 2)
	defer done()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			defer left()
			_, err := s.AppendHistory(ctx(t), key, rev, e)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a try of the append = %v; want nil", err)
		}
	}
	done()
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, x := range st.History {
		if x.Ticket == e.Ticket {
			seqs = append(seqs, x.Seq)
		}
	}
	if len(seqs) != 1 {
		t.Fatalf("the append is in the history at seqs %v; want once", seqs)
	}
}
