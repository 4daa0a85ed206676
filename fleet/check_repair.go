package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/callerctx"
	"sessdb/internal/shellquote"
	"sessdb/store"
)

// repair removes key's orphans among found, and numbers again a history
// whose newest entry is in the last slot, under the key's lease-backed
// lock, and says of every finding what was done: only those are check's
// to settle; the rest is the operator's to judge.
//
// The snapshot that judged a file an orphan may be older than the key: a
// promotion may have landed since, making the file it superseded young
// again for the grace period. So the key's record is read again under the
// lock and each file judged again from it, with its mtime as listed; one
// the fresh record needs is left. The lock keeps two repairs or a repair
// and a reap from judging the key at once; a promotion takes no lock, but
// can only ever name a file it wrote itself, which is never one past the
// in-flight window (a short grace can be shorter: the key removed since
// the snapshot and promoted anew, a file of a generation no higher than
// the snapshot's record is in flight).
// The renumber is guarded by the record's revision as read again (see
// renumber), so whatever wrote the key since is never lost.
//
// The caller's ctx ending there (its cancel or deadline) is returned as
// ctx's error, the findings saying the check was interrupted. etcd not
// answering (the lock, the record's read) is returned, after the
// key's findings say so: every key left would wait out the request timeout
// in turn, and the walk stops instead. So is the transcripts dir found
// unavailable at a removal (shared.ErrDirUnavailable): that orphan and
// the key's others are not removed, and say so.
func (c *checker) repair(ctx context.Context, key string, found []store.Finding) error {
	var orphans []int
	full := -1
	for i := range found {
		switch {
		case shared.IsMarkTemp(found[i].Path):
			// The dir's, no key's: removed where it was found (markTemp).
		case found[i].Kind == KindOrphan:
			orphans = append(orphans, i)
		case found[i].Path == c.slotPath(key, math.MaxUint64-1), found[i].Path == c.slotPath(key, math.MaxUint64):
			full = i
		case found[i].Kind == store.KindMode, found[i].Kind == store.KindOwner:
			// Settled by repairModes.
		case found[i].Severity == store.SeverityProblem && strings.HasPrefix(found[i].Path, c.b.meta.HistoryDir(key)):
			// A history entry's (or the key's history's): by the
			// history's own prefix, which a prefix named "/history/…"
			// puts in every path.
			found[i].Repair = "left as is: remove the entry with etcdctl del; the key's promotions fail as the finding says until then"
		case found[i].Kind == store.KindRecordUndecodable && etcdmeta.ValidKey(key):
			found[i].Repair = c.leftUndecodable(key)
		case found[i].Severity == store.SeverityProblem:
			found[i].Repair = leftAsIs(found[i].Kind)
		}
	}
	if len(orphans) == 0 && full < 0 {
		return nil
	}
	settle := orphans
	if full >= 0 {
		settle = append(slices.Clone(orphans), full)
	}
	leave := func(why string) {
		for _, i := range settle {
			notRemoved(&found[i], why)
			if i == full {
				found[i].Repair = "left as is: " + why
			}
		}
	}
	if err := c.b.at(hookRepair, key); err != nil {
		leave(err.Error())
		return nil
	}
	unlock, lost, err := c.b.lock(ctx, key)
	if errors.Is(err, etcdmeta.ErrLocked) {
		leave("the key's lock is held by another reap or repair; run check again")
		return nil
	}
	if cerr := stopped(ctx, err); cerr != nil {
		leave(fmt.Sprintf("check interrupted (%v) before the key's lock was had; run check again", cerr))
		return cerr
	}
	if err != nil {
		leave(c.b.unroot(err.Error()))
		return unavailable(err)
	}
	defer unlock()
	c.b.at(hookRepairHeld, key)
	st, err := c.b.readIn(ctx, key, c.b.meta.Get)
	if cerr := stopped(ctx, err); cerr != nil {
		leave(fmt.Sprintf("check interrupted (%v) before the key's record was read again; run check again", cerr))
		return cerr
	}
	hist := history{entries: st.History, rev: st.Rev}
	if err != nil && !errors.Is(err, etcdmeta.ErrAboveLastSlot) {
		if !errors.Is(err, etcdmeta.ErrDamaged) && !errors.Is(err, etcdmeta.ErrNewerSchema) {
			leave(c.b.unroot(err.Error()))
			return unavailable(err)
		}
		// A history (or record) that does not decode: the record alone,
		// its files judged by its date, as reap's sweep judges them
		// (stillOrphans); a key with no record has none of its files
		// needed. No renumber without the history.
		damaged := "the key's record or history does not decode: " + c.b.unroot(err.Error())
		if full >= 0 {
			notRemoved(&found[full], "")
			found[full].Repair = "left as is: " + damaged
			full = -1
		}
		c.b.at(hookRepairAlone, key)
		st, err = c.b.readIn(ctx, key, c.b.meta.GetRecord)
		if cerr := stopped(ctx, err); cerr != nil {
			leave(fmt.Sprintf("check interrupted (%v) before the key's record was read again; run check again", cerr))
			return cerr
		}
		if err != nil {
			// Nothing of the key is judged: the record does not decode
			// either, or etcd did not answer.
			if errors.Is(err, etcdmeta.ErrDamaged) || errors.Is(err, etcdmeta.ErrNewerSchema) {
				leave(damaged)
			} else {
				leave(c.b.unroot(err.Error()))
			}
			return unavailable(err)
		}
		hist = history{}
	}
	it := etcdmeta.Item{Key: key, Rev: st.Rev, Record: st.Record}
	if err := c.b.at(hookRepairLocked, key); err != nil {
		leave(err.Error())
		return nil
	}
	if full >= 0 {
		if err := c.renumber(ctx, key, st, &found[full]); err != nil {
			// The walk stops (etcd lost, ctx ended): no orphan removed.
			for _, i := range orphans {
				notRemoved(&found[i], strings.TrimPrefix(found[full].Repair, "left as is: "))
			}
			return err
		}
	}
	for n, i := range orphans {
		f := &found[i]
		select {
		case <-lost:
			notRemoved(f, "the key's lock ended (its lease expired) before the repair was done; run check again")
			continue
		default:
		}
		// Judged by its mtime as listed, not by the record alone: the
		// key may have been removed since the snapshot (a reaper, an
		// operator's etcdctl del) and taken a first promotion, whose
		// file, of a generation no higher than the snapshot's record, is
		// in flight now that the key has no record, or a lower one.
		if _, temp := shared.ParseTemp(f.Path); !temp && needs(it, st.Rev != 0, f.Path, c.listed[f.Path], c.cut, c.inFlight, hist) {
			f.Repair = "left: the key's record, read again under its lock, needs it now"
			if !needs(it, st.Rev != 0, f.Path, time.Time{}, c.cut, time.Time{}, hist) {
				f.Repair = "left: written within the in-flight window, and the key's record, read again under its lock, is none or of a lower generation: a promotion may still commit it"
			}
			continue
		}
		err := shared.Remove(c.b.dir, f.Path)
		if err != nil {
			// The dir itself gone is no other reaper's removal: nothing
			// is removed, of this key's orphans or any other key's.
			if err := shared.DirErr(c.b.dir); err != nil {
				for _, j := range orphans[n:] {
					notRemoved(&found[j], err.Error())
				}
				return err
			}
		}
		c.removal(f, err)
	}
	return nil
}

// removal says in f what the removal of its file did, err its error.
func (c *checker) removal(f *store.Finding, err error) {
	switch {
	case gone(err):
		// Another check --repair or a reap, running at once, removed it
		// first: not this run's removal, as reap's sweep does not count a
		// file another swept.
		f.Repair, f.Remains = "gone since it was found (removed by another check --repair or a reap): nothing left to remove", false
	case err != nil:
		notRemoved(f, c.b.unroot(err.Error()))
	default:
		f.Repair, f.Repaired, f.Remains = "removed", true, false
	}
}

// notRemoved says in f that its file was left, and why: a repair that
// failed (RepairFailed), which the CLI counts failed and names on stderr.
// Every orphan a repairing check meant to remove and did not says so
// through it, in the one form "not removed: <why>".
func notRemoved(f *store.Finding, why string) {
	f.Repair, f.RepairFailed = "not removed: "+why, true
}

// slotPath is the path check reports key's history entry at seq by: one
// in the last slot, or above it (see checker.history).
func (c *checker) slotPath(key string, seq uint64) string {
	return c.b.meta.HistoryKey(key, seq)
}

// renumber numbers key's history again from 1 in place (etcdmeta's
// RenumberHistory), guarded by st, the key as read again under its lock,
// and says in f what it did. A key whose record moved since that read (an
// operator's etcdctl, a binary that takes no lock) is left: the renumber
// writes nothing then, and the next check sees the key as it is. No
// promotion can land meanwhile (the history full refuses it), and one
// racing the renumber only loses its guess of the newest slot, and lands
// above the entries renumbered: nothing is lost either way. It returns an
// error only where the walk stops: etcd unavailable, or ctx ended before
// it began (once begun, it is finished within the request timeout).
func (c *checker) renumber(ctx context.Context, key string, st etcdmeta.State, f *store.Finding) error {
	if n := len(st.History); n == 0 || !etcdmeta.LastSlot(st.History[n-1].Seq) {
		f.Repair, f.Remains = "nothing to do: the key, read again under its lock, no longer holds an entry in the last slot", false
		return nil
	}
	if st.Rev == 0 {
		// A history with no record (strayHistory), the entry still in
		// the last slot: RenumberHistory refuses it (a key with no
		// record keeps no history), and the key's next promotion fails
		// on it. It remains, the operator's to remove.
		f.Repair = "left as is: the key has no record, and no history without one is numbered again: remove it with etcdctl del --prefix " + etcdctlKey(c.b.meta.HistoryDir(key))
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		f.Repair = fmt.Sprintf("left as is: check interrupted (%v) before the history was numbered again; run check again", cerr)
		return cerr
	}
	// Each of its requests is bounded by the request timeout (etcdmeta).
	// Once begun it is finished whatever ctx does (Ctrl-C): cut short,
	// a transaction etcd had served was reported not done.
	did, err := c.b.meta.RenumberHistory(callerctx.WithoutCancel(ctx), key, st.Rev)
	var ce *etcdmeta.ConflictError
	switch {
	case err == nil && did.Kept == 0:
		f.Repair, f.Remains = "nothing to do: the key no longer holds an entry in the last slot", false
	case err == nil:
		f.Repair = fmt.Sprintf("numbered again in place: the newest %d entries at slots 1 to %d, each as it was", did.Kept, did.Kept)
		switch {
		case did.Dropped == 1:
			f.Repair += fmt.Sprintf(", the older one (below the ring of %d a write keeps) removed", etcdmeta.HistoryLimit)
		case did.Dropped > 1:
			f.Repair += fmt.Sprintf(", the %d older ones (below the ring of %d a write keeps) removed", did.Dropped, etcdmeta.HistoryLimit)
		}
		f.Repair += "; the record is not rewritten (its revision, a job's base, stays) and the key takes promotions again"
		f.Repaired, f.Remains = true, false
	case errors.As(err, &ce) && ce.Current.Rev == st.Rev:
		f.Repair = "left as is: the key changed while it was repaired (its history was written since it was read under the lock); run check again"
	case errors.As(err, &ce):
		f.Repair = fmt.Sprintf("left as is: the key changed while it was repaired (its record moved from revision %d to %d); run check again", st.Rev, ce.Current.Rev)
	case etcdmeta.Unanswered(err):
		// The commit may have landed with its answer lost, and every try
		// sent again unanswered too: "left as is" would be false of a
		// history numbered again, which the next check finds nothing
		// to do about.
		f.Repair, f.RepairFailed = fmt.Sprintf("not known: %s (a try's answer was lost: the history may be numbered again already; run check again to know)", c.b.unroot(err.Error())), true
		return interruptedOr(ctx, unavailable(err))
	default:
		f.Repair, f.RepairFailed = "left as is: "+c.b.unroot(err.Error()), true
		return interruptedOr(ctx, unavailable(err))
	}
	return nil
}

// interruptedOr is ctx's error where ctx ended (a Ctrl-C under a renumber
// that was finished: the walk is interrupted, whatever the renumber met),
// else err.
func interruptedOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && err != nil {
		return cerr
	}
	return err
}

// unavailable is err if etcd did not answer, else nil.
func unavailable(err error) error {
	if errors.Is(err, etcdmeta.ErrUnavailable) {
		return err
	}
	return nil
}

// leftUndecodable says why a repairing check leaves key's record that does
// not decode (or names a file not its key's) alone, and what the operator
// removes: the record and its history, exactly, the history first. A
// record removed alone leaves its history without one, which the key's
// next promotion would go on from (and a migration into the fleet
// refuses); the history removed first leaves a record nothing writes
// over meanwhile.
func (c *checker) leftUndecodable(key string) string {
	return fmt.Sprintf("left as is: the key cold-starts (meta-unreadable) and no promotion writes over it; look at it, then remove its history and its record with etcdctl, in this order: etcdctl del --prefix %s; etcdctl del %s",
		etcdctlKey(c.b.meta.HistoryDir(key)), etcdctlKey(c.b.meta.RecordKey(key)))
}

// etcdctlKey is the etcd key s as the last argument of an etcdctl
// command line: one shell word (shellquote.Word), after "--" where s begins
// with "-" (a prefix may), which etcdctl would otherwise take for an
// option ("unknown shorthand flag") and remove nothing.
func etcdctlKey(s string) string { return lastArg(s) }

// lastArg is s as the last argument of a command line (etcdctl's, or
// sessdb's, whose flags end at "--" too): one shell word, after "--"
// where s begins with "-", which the command would take for an option.
func lastArg(s string) string {
	if strings.HasPrefix(s, "-") {
		return "-- " + shellquote.Word(s)
	}
	return shellquote.Word(s)
}

// leftAsIs says why a repairing check leaves a finding of kind k alone.
func leftAsIs(k store.Kind) string {
	switch k {
	case store.KindTranscriptMismatch:
		return "left as is: the next resolve cold-starts the key (transcript-replaced) and its next promotion replaces the transcript"
	case store.KindMetaNewerSchema:
		return "left as is: run the sessdb that wrote it"
	case store.KindLink, store.KindNotRegular, store.KindNotADirectory:
		return "left as is: sessdb never follows or removes it; look at it and remove it by hand"
	case store.KindUnreadable:
		return "left as is: check again"
	}
	return "left as is"
}
