package fleet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/store"
)

// otherStamps says how the stamps the ladder reads with a generation
// differ between etcd's record (held) and a key dir's as the store serves
// it (dir: its sidecars, with the generation served and the promotion
// time the store's expiry reads, see served), each as the ladder means
// them (an absent venue is "local", an absent pi-version "", an absent
// chain 0); "" when they agree.
func otherStamps(held, dir etcdmeta.Record) string {
	var out []string
	diff := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s in etcd, %s in the key dir", name, a, b))
		}
	}
	str := func(p *string, absent string) string {
		if p == nil {
			return strconv.Quote(absent)
		}
		return strconv.Quote(*p)
	}
	chain := func(p *uint64) string {
		if p == nil {
			return "0"
		}
		return strconv.FormatUint(*p, 10)
	}
	reading := func(c *etcdmeta.Context) string {
		if c == nil {
			return "none"
		}
		return fmt.Sprintf("%d/%d %q", c.Tokens, c.Window, c.Model)
	}
	diff("venue", str(held.Venue, "local"), str(dir.Venue, "local"))
	diff("pi-version", str(held.PiVersion, ""), str(dir.PiVersion, ""))
	diff("chain", chain(held.ResumeChain), chain(dir.ResumeChain))
	diff("context", reading(held.Context), reading(dir.Context))
	if a, b := held.Transcript, dir.Transcript; a != nil && b != nil && a.PromotedAt != b.PromotedAt {
		diff("promoted", time.Unix(0, a.PromotedAt).UTC().Format(time.RFC3339Nano), time.Unix(0, b.PromotedAt).UTC().Format(time.RFC3339Nano))
	}
	return strings.Join(out, "; ")
}

// oneLineage reports whether a key dir (its history dirHist) and etcd
// (etcdHist) hold the generation t (nil: none) by one promotion: the
// key dir's newest entry of a promotion that landed it (of any
// generation when t is nil) is in etcd's history too, as a migration
// either way carries it. Only a migration of one to the other gives two
// histories one entry; another root's promotion of the same bytes has a
// time, a job and a ticket of its own. An operator's accept (check
// --repair --accept) makes a generation as a promotion does, its entry's
// outcome "accepted": it tells the lineage the same way. A generation
// no entry made (a key migrated from the legacy layout, whose meta.db
// starts with no history) tells none: two roots' legacy keys cannot be
// told from one by it (stampConflict's replaced can, where the key dir's
// own promotion lost its temp).
//
// The stamps of one lineage can differ at the same generation: a
// promotion committed on the key dir after etcd got the key, whose temp
// was lost or damaged before its rename, leaves the generation before it
// in place, served under that promotion's stamps (the store's roll-
// forward discards the temp and keeps its record pending). That is this
// key's own state, not another root's conversation: already.
func oneLineage(dirHist, etcdHist []etcdmeta.HistoryEntry, t *etcdmeta.Transcript) bool {
	for i := len(dirHist) - 1; i >= 0; i-- {
		e := dirHist[i]
		if e.Outcome != "" && e.Outcome != store.AcceptedOutcome || t != nil && e.Gen != t.Gen {
			continue
		}
		return etcdmeta.Holds(etcdHist, e)
	}
	return false
}

// stampConflict is the cause of a conflict for a key etcd and a key dir
// hold at the same generation (t) under other stamps, by no one
// lineage (see oneLineage): another root's key, the same bytes stamped
// by other jobs; "" when the stamps agree or the two are one lineage.
// Kept as already, one side's jobs would be judged by the other side's
// stamps (venue-changed where they resumed, or resumed where a bound
// stopped them), with exit 0 and no word.
//
// replaced is the generation the key dir's own promotion replaced where
// that promotion committed and lost its temp (lostPromotion: the key dir
// then serves it, under that promotion's stamps), else nil. Where no
// history entry made the generation (untold: a key migrated from the
// legacy layout, of which oneLineage tells nothing), it tells the lineage
// instead: the promotion replaced exactly what etcd holds, its identity
// and its promotion time to the nanosecond, which only the migration of
// one to the other gives two roots (a copy of one root is one lineage, as
// oneLineage judges a copy too).
func stampConflict(held, dir etcdmeta.Record, dirHist, etcdHist []etcdmeta.HistoryEntry, replaced *etcdmeta.Transcript) string {
	d := otherStamps(held, dir)
	if d == "" || oneLineage(dirHist, etcdHist, dir.Transcript) || untold(dirHist, dir.Transcript) && sameIdentity(replaced, held.Transcript) {
		return ""
	}
	return d
}

// untold reports whether no entry of the key dir's history dirHist made
// the generation t, so that oneLineage has nothing to judge it by: a
// generation migrated from the legacy layout. Where one did, that entry
// judges, as it always has.
func untold(dirHist []etcdmeta.HistoryEntry, t *etcdmeta.Transcript) bool {
	for _, e := range dirHist {
		if (e.Outcome == "" || e.Outcome == store.AcceptedOutcome) && (t == nil || e.Gen == t.Gen) {
			return false
		}
	}
	return true
}

// sameIdentity reports whether a and b are one generation's identity:
// its number, size, CRC32C and promotion time alike.
func sameIdentity(a, b *etcdmeta.Transcript) bool {
	return a != nil && b != nil && a.Gen == b.Gen && a.Size == b.Size && a.CRC32C == b.CRC32C && a.PromotedAt == b.PromotedAt
}

// lostPromotion is the generation a key dir (sidecars sc, its transcript
// in place or not, of size bytes and CRC32C sum) serves because its
// newest promotion committed and lost its temp (servedPrev), as that
// promotion's record names it (db.Pending.Prev, with its own promotion
// time); nil for any other key dir, or a Prev an older schema did not
// write.
func lostPromotion(sc db.Sidecars, file bool, size int64, sum uint32) *etcdmeta.Transcript {
	if _, kind := served(sc, file, size, sum); kind != servedPrev {
		return nil
	}
	p := sc.Pending.Prev
	return &etcdmeta.Transcript{Gen: p.Gen, Size: p.Size, CRC32C: p.CRC32C, PromotedAt: p.PromotedAt}
}
