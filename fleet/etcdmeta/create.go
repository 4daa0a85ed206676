package etcdmeta

import (
	"context"
	"fmt"
	"math"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/callerctx"
)

// Create writes rec as key's record and hist as its whole history, in one
// transaction that commits only if the key has no record and no history
// entry at all: the first write of a key brought in whole from elsewhere
// (fleet's migration from a single host), where Put would start the
// history afresh. hist is oldest first, and each entry keeps its Seq,
// which must increase along it; only the newest HistoryLimit are written.
// The record is written with HistoryGen set from them (rec's own is
// ignored). A key that holds a record or any history entry is a *ConflictError
// carrying what it holds; nothing is written. It returns the record's
// revision.
//
// Like every write, a Create that returns ErrUnavailable may have
// committed: retried, it commits or conflicts with itself (a record that
// names this Create's transcript file).
func (s *Store) Create(ctx context.Context, key string, rec Record, hist []HistoryEntry) (Rev, error) {
	ctx = callerctx.Of(ctx)
	for i := 1; i < len(hist); i++ {
		if hist[i].Seq <= hist[i-1].Seq {
			return 0, fmt.Errorf("create %s: history seq %d follows %d: %w", key, hist[i].Seq, hist[i-1].Seq, ErrHistoryOrder)
		}
	}
	if n := len(hist); n > 0 && hist[n-1].Seq == math.MaxUint64 {
		return 0, fmt.Errorf("create %s: %w: history seq %d is the last slot, which holds no entry", key, ErrDamaged, hist[n-1].Seq)
	}
	if len(hist) > HistoryLimit {
		hist = hist[len(hist)-HistoryLimit:]
	}
	rec.HistoryGen = 0
	for _, e := range hist {
		if e.Gen > rec.HistoryGen && (rec.Transcript == nil || e.Gen > rec.Transcript.Gen) {
			rec.HistoryGen = e.Gen
		}
	}
	val, err := encodeRecord(rec, newestSeq(hist))
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", key, err)
	}
	ops := []clientv3.Op{clientv3.OpPut(s.recordKey(key), string(val))}
	for _, e := range hist {
		v, err := encodeHistory(e)
		if err != nil {
			return 0, fmt.Errorf("create %s: %w", key, err)
		}
		ops = append(ops, clientv3.OpPut(s.historyKey(key, e.Seq), string(v)))
	}
	c, cancel, err := s.begin(ctx, "create", key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	c, sends := withSends(c)
	// A history without a record is no key sessdb wrote (Delete removes
	// both at once), but writing over part of it would interleave two
	// histories: the compare over the whole prefix refuses it.
	resp, err := s.cli.Txn(c).If(
		clientv3.Compare(clientv3.ModRevision(s.recordKey(key)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(s.historyDir(key)), "=", 0).WithPrefix(),
	).Then(ops...).Else(s.stateOps(key)...).Commit()
	if err != nil {
		return 0, s.cfg.opErr(ctx, "create", key, err)
	}
	if !resp.Succeeded {
		cur, _ := parseState(key, s.historyDir(key), resp.Header.Revision, resp.Responses)
		return 0, &ConflictError{Op: "create", Key: key, Base: 0, Current: cur, Resent: sends.Load() > 1}
	}
	s.rememberSeq(key, newestSeq(hist))
	return Rev(resp.Header.Revision), nil
}
