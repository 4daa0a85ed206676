package fleet

import (
	"context"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/store"
)

// StatsOptions says which promotions Stats counts, how it judges the
// verdicts and how it walks.
type StatsOptions struct {
	// Window is how far back the promotions counted reach, as in
	// store.StatsOptions: the history entries recorded at or after the
	// walk's start minus Window. Zero or less counts none.
	Window time.Duration
	// Bounds and Now are the ladder's bounds and clock, as Inspect's:
	// the verdicts are judged with them, and Now's reading when the walk
	// begins is the window's end (store.Stats.At). nil Now: time.Now.
	Bounds gates.Bounds
	Now    func() time.Time
	// Workers and Progress are as in InspectOptions: Progress is given
	// the keys reported so far and the records etcd held at the
	// listing's first page (and the keys with a history and no record
	// met so far).
	Workers  int
	Progress func(done, total int)
}

// Stats is what one walk of the fleet says about the whole of it, as
// store.Store.Stats says it of a sessions root, in the same figures and
// label sets: the keys by layout (etcd) and by the verdict a job matching
// each key's own stamps would get now, the promotions of the window from
// the keys' histories, the distributions of the record-named generation
// files' sizes, of resume chains and context occupancy, the bytes of
// those files (TranscriptBytes) and the bytes etcd holds for the keys'
// records and history entries (EtcdBytes). MetaDBBytes and LegacyBytes
// are 0: a fleet has neither.
//
// It walks as Inspect does, read-only (nothing written to etcd or the
// transcripts dir, no file opened for writing, no lock taken): one
// snapshot of the records, a page at a time, each key's whole history
// read with its record at one revision, its generation file's stat and
// first line. A key with a history and no record counts as a key
// (layout etcd, verdict absent), its entries in the window counted; a
// name that is no key counts in OtherEntries; a key reaped while the
// walk runs is not counted. A record or history entry that does not
// decode leaves out what does not decode; the entries of the key's
// history that do are counted, and a ring that is full in etcd counts in
// Promotions.TruncatedKeys as a full ring, though fewer of its entries
// decode.
//
// When ctx ends the walk early, Stats returns the figures of the keys
// reported so far, marked Interrupted, with ctx's error. Any other error
// (etcd unavailable or refusing the credentials, the transcripts dir
// unavailable: Inspect's) returns nil and the error. A nil ctx is
// context.Background().
func (b *Backend) Stats(ctx context.Context, o StatsOptions) (*store.Stats, error) {
	if err := b.opened(); err != nil {
		return nil, err
	}
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if o.Now == nil {
		o.Now = time.Now
	}
	io := InspectOptions{Bounds: o.Bounds, Now: o.Now, History: etcdmeta.HistoryLimit, Workers: o.Workers, Progress: o.Progress}
	return store.SumStats(ctx, o.Now(), o.Window, func(visit func(store.KeyReport) error) error {
		return callersEnd(ctx, b.inspect(ctx, io, func(r Report) error {
			if r.stray {
				// A key of the fleet, as dump shows it: its history is
				// in etcd, which a resolve (absent) goes on from.
				r.Layout = LayoutEtcd
			}
			return visit(r.KeyReport)
		}))
	})
}
