package etcdmeta

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
)

// Renumbered is what RenumberHistory did: how many entries it wrote again
// at the slots 1, 2, ... (0: nothing written), and how many older ones,
// below the ring, it removed.
type Renumbered struct {
	Kept, Dropped int64
}

// RenumberHistory settles what LastSlot reports: where key's newest
// history entry is in the last slot, or above it (ErrAboveLastSlot: the
// key's only damage), it writes the key's newest
// HistoryLimit entries again at the slots 1, 2, ... in their order, each
// value as it was, and removes every other entry (those below the ring,
// which the key's next write would trim anyway). Anywhere else it writes
// nothing and returns the zero Renumbered.
//
// It is one transaction, guarded by base, the record's mod revision (0 is
// refused: a key with no record keeps no history), and by the history as
// read: no entry written since the read and each entry read still in
// place. The record is not written, so its revision stays: no job's base
// is superseded by the renumber, and a job whose promotion took the last
// slot for its guess loses only that guess's compare and is retried above
// the renumbered entries. The record's hint of the newest slot stays as
// stale as it was, which costs a new process's first write one retry. A
// lost compare is a *ConflictError carrying what the key holds; nothing
// is written. A history that does not decode is ErrDamaged, not
// renumbered; so is one holding, below the ring, a name that is no
// slot's among the slots the renumber writes (the deletes would miss it,
// and it would be read among the newest entries): the error names it.
//
// The transaction is at most HistoryLimit puts and two deletes (by range,
// whatever a hostile history holds below the ring), HistoryLimit + 2
// compares, and three reads when it fails: under etcd's default
// --max-txn-ops of 128. With several endpoints it is sent again as a
// read is (see Hedge), and, unanswered, again after a backoff within the
// request timeout; it lands once: a try after another landed fails its
// compares and finds the newest entry's value in the slot the renumber
// puts it in, written since the read, which is that renumber, landed,
// whatever the key took after it.
func (s *Store) RenumberHistory(ctx context.Context, key string, base Rev) (Renumbered, error) {
	ctx = callerctx.Of(ctx)
	const op = "renumber history"
	c, cancel, err := s.begin(ctx, op, key)
	if err != nil {
		return Renumbered{}, err
	}
	defer cancel()
	dir := s.historyDir(key)
	// The state, with the history's size, at one revision; and the
	// first names from slot 1 up, where the renumber writes (below).
	read := append(s.stateOps(key), clientv3.OpGet(dir, clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(s.historyKey(key, 1), clientv3.WithRange(s.historyKey(key, HistoryLimit+1)),
			clientv3.WithKeysOnly(), clientv3.WithLimit(HistoryLimit+1)))
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.TxnResponse, error) {
		return s.cli.Txn(c).Then(read...).Commit()
	})
	if err != nil {
		return Renumbered{}, s.cfg.opErr(ctx, op, key, err)
	}
	st, err := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses)
	switch {
	case err != nil && !errors.Is(err, ErrAboveLastSlot):
		return Renumbered{}, err
	case base == 0 || st.Rev != base:
		return Renumbered{}, &ConflictError{Op: op, Key: key, Base: base, Current: st}
	case len(st.History) == 0 || !LastSlot(st.History[len(st.History)-1].Seq):
		return Renumbered{}, nil
	}
	kvs := resp.Responses[1].GetResponseRange().Kvs // newest first
	n := int64(len(kvs))
	// The deletes range below slot 1 and above slot n (see below): a name
	// that is no slot's between them, below the ring so that no Get read
	// it, would be left among the renumbered entries, and every Get of
	// the key ErrDamaged. The slots 1 to n hold at most n names, so the
	// first n+1 from slot 1 up hold any such name, if there is one.
	end := s.historyKey(key, uint64(n)+1)
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		if name := string(kv.Key); name < end {
			if _, ok := parseSeq(name[len(dir):]); !ok {
				return Renumbered{}, fmt.Errorf("%s %s: %w: history entry name %s sorts among the slots the renumber writes (1 to %d); remove it (etcdctl del)", op, key, ErrDamaged, quoteName(name[len(dir):]), n)
			}
		}
	}
	if err := faults.At(faults.EtcdRenumberBeforeCommit); err != nil {
		return Renumbered{}, err
	}
	rk := s.recordKey(key)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(rk), "=", int64(base)),
		clientv3.Compare(clientv3.ModRevision(dir), "<", resp.Header.Revision+1).WithPrefix(),
	}
	// etcd refuses a transaction whose delete range holds a key it also
	// puts, so the deletes leave the new slots out: below slot 1 (slot 0,
	// and names no slot has) and above slot n.
	then := []clientv3.Op{
		clientv3.OpDelete(dir, clientv3.WithRange(s.historyKey(key, 1))),
		clientv3.OpDelete(s.historyKey(key, uint64(n)+1), clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir))),
	}
	for i, kv := range kvs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		then = append(then, clientv3.OpPut(s.historyKey(key, uint64(n)-uint64(i)), string(kv.Value)))
	}
	// A try whose compares fail finds its sibling landed where the slot
	// the newest entry goes to holds that entry's value, written since
	// the read: only a renumber of this history writes it there. Not
	// "the key holds exactly the renumbered history": the key takes
	// writes again once renumbered, and one that landed before the try
	// was served (the job's retry, a refusal's entry) made a renumber
	// that landed a conflict.
	top := s.historyKey(key, uint64(n))
	orElse := append(s.stateOps(key), clientv3.OpGet(top))
	commit := func(c context.Context) (struct{}, error) {
		out, err := s.cli.Txn(c).If(cmps...).Then(then...).Else(orElse...).Commit()
		if err != nil || out.Succeeded {
			return struct{}{}, err
		}
		if got := out.Responses[2].GetResponseRange().Kvs; len(got) == 1 &&
			got[0].ModRevision > resp.Header.Revision && bytes.Equal(got[0].Value, kvs[0].Value) {
			return struct{}{}, nil
		}
		cur, _ := parseState(key, dir, out.Header.Revision, out.Responses)
		return struct{}{}, &ConflictError{Op: op, Key: key, Base: base, Current: cur}
	}
	conflict := func(err error) bool {
		var ce *ConflictError
		return errors.As(err, &ce)
	}
	// The commit is a request of its own, with its own timeout: a read
	// that met a silent member must not leave it too little to be sent
	// again past one. Within it, a commit etcd did not answer is sent
	// again, after a backoff, as every guarded write of the fleet's is:
	// its answer may have been lost after it landed (a leader change
	// overtaking it once applied, a connection the keepalive closes under
	// it), and only a try sent again tells, by finding its entries in
	// place. Returned at once, a renumber that had landed was etcd
	// unavailable, and check --repair stopped its walk on it. A try that
	// fails while a sibling is in flight waits for that sibling's answer
	// (only a conflict ends the hedge at once): it may be the landing.
	w, cancelW := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancelW()
	for try := 0; ; try++ {
		_, err = Hedge(s, w, commit, conflict, nil)
		if err == nil || conflict(err) || classify(ctx, err) != ErrUnavailable || !Backoff(w, try) {
			break
		}
	}
	if conflict(err) {
		return Renumbered{}, err
	}
	if err != nil {
		return Renumbered{}, s.cfg.opErr(ctx, op, key, err)
	}
	s.rememberSeq(key, uint64(n))
	return Renumbered{Kept: n, Dropped: resp.Responses[2].GetResponseRange().Count - n}, nil
}
