package fleet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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
// told from one.
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
func stampConflict(held, dir etcdmeta.Record, dirHist, etcdHist []etcdmeta.HistoryEntry) string {
	d := otherStamps(held, dir)
	if d == "" || oneLineage(dirHist, etcdHist, dir.Transcript) {
		return ""
	}
	return d
}
