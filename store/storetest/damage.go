package storetest

import (
	"fmt"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// stageNext resolves key as a job, stages one more turn and returns the
// session, ready to promote.
func (e *env) stageNext(key, tag string) store.Session {
	e.t.Helper()
	sess, jobDir, data := e.job(key, tag)
	e.stage(jobDir, turn(data, tag, 10))
	return sess
}

// failed promotes sess and requires promote-failed with its cause.
func (e *env) failed(sess store.Session) {
	e.t.Helper()
	res, err := e.s.Promote(sess, store.PromoteRequest{PiVersion: piVersion})
	if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
		e.fatalf("promote = %+v, %v; want promote-failed with its cause", res, err)
	}
}

// holds requires key to resume, ending in the turn tagged tag, at gen.
func (e *env) holds(key, tag string, gen uint64) {
	e.t.Helper()
	sess, jobDir := e.resolve(key, localJob())
	e.want(sess, true, gates.Resumed)
	if got := lastText(e.staged(jobDir)); got != "answer "+tag || sess.Gen() != gen {
		e.fatalf("the key resumes %q at gen %d, want %q at gen %d", got, sess.Gen(), "answer "+tag, gen)
	}
}

// A promotion stopped between its steps, as a crash or a lost answer
// would stop it.
var interruptPromises = []promise{
	{"interrupt/before the commit: the key as it was, and the retry promotes", func(e *env) {
		e.run(key, "before")
		before, beforeH := e.record(key)
		sess := e.stageNext(key, "after")
		e.interrupt(BeforeCommit)
		e.failed(sess)
		e.unchanged(key, before, beforeH, "a promotion interrupted before its commit")
		e.holds(key, "before", 1)
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Repeat || res.Gen != 2 {
			e.fatalf("the retry = %+v, want gen 2, no repeat", res)
		}
		e.holds(key, "after", 2)
	}},
	{"interrupt/after the commit: resolves serve it, and the retry repeats it", func(e *env) {
		e.run(key, "before")
		sess := e.stageNext(key, "after")
		e.interrupt(AfterCommit)
		e.failed(sess)
		e.holds(key, "after", 2)
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || !res.Repeat || res.Gen != 2 {
			e.fatalf("the retry = %+v, want a repeat of gen 2", res)
		}
		if sc, h := e.record(key); sc.Transcript.Gen != 2 || *sc.ResumeChain != 1 || len(h) != 2 {
			e.fatalf("gen %d, chain %d, %d history entries: the commit counted twice", sc.Transcript.Gen, *sc.ResumeChain, len(h))
		}
	}},
}

// What damage does to a key, through the backend's Damager.
var damagePromises = []promise{
	{"damage/an undecodable record is meta-unreadable, never written over", neverWrittenOver(DamageRecord)},
	{"damage/a newer schema is meta-unreadable, never written over", neverWrittenOver(DamageNewerSchema)},
	{"damage/a record of generation 0 beside its file is meta-unreadable, never written over", neverWrittenOver(DamageRecordGenZero)},
	{"damage/a record whose CRC32C is wider than 32 bits is meta-unreadable, never written over", neverWrittenOver(DamageRecordWideCRC)},
	{"damage/a record of a negative size is meta-unreadable, never written over", neverWrittenOver(DamageRecordNegativeSize)},
	{"damage/a transcript changed out of band is transcript-replaced, until the next promotion", func(e *env) {
		for _, d := range []Damage{DamageTranscriptChanged, DamageTranscriptGrown} {
			k := store.Key("github", "damage", string(d))
			e.run(k, "x")
			e.damage(k, d)
			sess, jobDir := e.resolve(k, localJob())
			e.want(sess, false, gates.TranscriptReplaced)
			// The job starts cold from the key's record: its promotion
			// replaces what cannot be delivered.
			e.stage(jobDir, turn(header(start), "fresh", 10))
			if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 {
				e.fatalf("%s: the next promotion = %+v", d, res)
			}
			e.holds(k, "fresh", 2)
		}
	}},
	{"damage/a transcript cut to 0 bytes is absent", func(e *env) {
		e.run(key, "x")
		e.damage(key, DamageTranscriptEmptied)
		sess, _ := e.resolve(key, localJob())
		e.want(sess, false, gates.Absent)
	}},
	{"damage/a transcript that is a link or a FIFO is not-a-regular-file", func(e *env) {
		for _, d := range []Damage{DamageTranscriptLink, DamageTranscriptFIFO} {
			k := store.Key("github", "damage", string(d))
			e.run(k, "x")
			e.damage(k, d)
			done := make(chan store.Session, 1)
			jobDir := e.t.TempDir()
			go func() { s, _ := e.s.Resolve(k, localJob(), jobDir); done <- s }()
			select {
			case sess := <-done:
				e.want(sess, false, gates.NotARegularFile)
				if got := e.staged(jobDir); len(got) != 0 {
					e.fatalf("%s: %d bytes staged", d, len(got))
				}
			case <-time.After(30 * time.Second):
				e.fatalf("%s: the resolve hangs", d)
			}
		}
	}},
	{"damage/a transcript gone is a named cold start, until the next promotion", func(e *env) {
		e.run(key, "x")
		e.damage(key, DamageTranscriptGone)
		sess, jobDir := e.resolve(key, localJob())
		if sess.Resume || (sess.Reason != gates.Absent && sess.Reason != gates.TranscriptReplaced) {
			e.fatalf("resolve = %s, want absent or transcript-replaced", describe(sess))
		}
		e.stage(jobDir, turn(header(start), "fresh", 10))
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 {
			e.fatalf("the next promotion = %+v", res)
		}
		e.holds(key, "fresh", 2)
	}},
	{"damage/a key dir that is a link is never followed", func(e *env) {
		e.run(key, "x")
		sess := e.stageNext(key, "y")
		e.damage(key, DamageKeyLink)
		got, _ := e.resolve(key, localJob())
		e.want(got, false, gates.NotARegularFile)
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); res.Promoted || res.Reason != gates.NotARegularFile {
			e.fatalf("promote through a linked key dir = %+v, want not-a-regular-file", res)
		}
	}},
	{"damage/a history at its last sequence number is numbered again by check --repair, and the job's retry promotes", func(e *env) {
		e.run(key, "one")
		e.run(key, "two")
		_, before := e.record(key)
		sess := e.stageNext(key, "three")
		e.damage(key, DamageHistoryFull)
		mt, ok := e.inst.(Maintainer)
		if !ok {
			e.t.Skip("the instance is no storetest.Maintainer")
		}
		e.failed(sess)
		e.holds(key, "two", 2)
		// The failed promotion may leave what its backend sweeps (a key
		// dir's temp, which a failed commit could have landed): repaired
		// too. Nothing may remain.
		found, err := mt.Check(store.Options{Now: e.clock.Now}, true)
		renumbered := false
		for _, f := range found {
			renumbered = renumbered || f.Kind == store.KindRecordUndecodable && f.Repaired
			if f.Remains {
				err = fmt.Errorf("%s remains: %s", f.Path, f.Repair)
			}
		}
		if err != nil || !renumbered {
			e.fatalf("check --repair = %+v, %v; want the history numbered again, nothing remaining", found, err)
		}
		_, after := e.record(key)
		if len(after) != len(before) {
			e.fatalf("%d history entries after the repair, want the %d before", len(after), len(before))
		}
		for i := range after {
			if after[i].Seq != uint64(i+1) || after[i].Gen != before[i].Gen || after[i].Ticket != before[i].Ticket || after[i].At != before[i].At {
				e.fatalf("entry %d after the repair = %+v, want %+v at seq %d", i, after[i], before[i], i+1)
			}
		}
		e.holds(key, "two", 2)
		// The record kept its revision (a fleet's) and its identity: the
		// job resolved before the damage is promoted, not superseded.
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Repeat || res.Gen != 3 {
			e.fatalf("the job's retry after the repair = %+v, want gen 3", res)
		}
		e.holds(key, "three", 3)
		if _, h := e.record(key); h[len(h)-1].Seq != uint64(len(before))+1 || h[len(h)-1].Gen != 3 {
			e.fatalf("the retry's entry %+v, want gen 3 at seq %d", h[len(h)-1], len(before)+1)
		}
	}},
	{"damage/a committed promotion's lost transcript falls back to the generation before", func(e *env) {
		e.run(key, "before")
		sess := e.stageNext(key, "after")
		e.interrupt(AfterCommit)
		e.failed(sess)
		e.damage(key, DamageLosePending)
		e.holds(key, "before", 1)
		next := e.stageNext(key, "next")
		if res := e.promote(next, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 3 {
			e.fatalf("promote onto the fallback = %+v, want gen 3 (gen 2 is never reused)", res)
		}
		e.holds(key, "next", 3)
	}},
}

// neverWrittenOver is the promise for a record damage d makes unreadable:
// the key resolves meta-unreadable, a promotion onto it fails, and the key
// still resolves meta-unreadable after it.
func neverWrittenOver(d Damage) func(*env) {
	return func(e *env) {
		e.run(key, "x")
		sess := e.stageNext(key, "y")
		e.damage(key, d)
		got, _ := e.resolve(key, localJob())
		e.want(got, false, gates.MetaUnreadable)
		e.failed(sess)
		// A job resolved on the damaged key is a cold start whose ticket
		// has no base; its promote fails as well: what the key holds is
		// not known, and a run that never saw it replaces nothing.
		cold := e.stageNext(key, "z")
		if cold.Resume || cold.Reason != gates.MetaUnreadable {
			e.fatalf("resolve of the damaged key = %s, want {resume false, %s}", describe(cold), gates.MetaUnreadable)
		}
		e.failed(cold)
		got, _ = e.resolve(key, localJob())
		e.want(got, false, gates.MetaUnreadable)
	}
}

func ptr[T any](v T) *T { return &v }

// The read fallback for keys in an older layout (the legacy sidecar
// files), through the backend's Planter.
var legacyPromises = []promise{
	{"legacy/a planted key is judged by the same ladder", func(e *env) {
		pl, ok := e.inst.(Planter)
		if !ok {
			e.t.Skip("the instance is no storetest.Planter: it has no older layout")
		}
		data := turn(header(start), "legacy", 10)
		if err := pl.Plant(key, data, Stamps{PiVersion: ptr(piVersion), Venue: ptr("local"), Chain: ptr(uint64(2)),
			Context: &gates.Context{Tokens: 150000, Window: 200000, Model: model}}); err != nil {
			e.t.Fatal(err)
		}
		sess, jobDir := e.resolve(key, localJob())
		if e.want(sess, true, gates.Resumed); lastText(e.staged(jobDir)) != "answer legacy" {
			e.fatalf("resumed %q", lastText(e.staged(jobDir)))
		}
		far, newer := localJob(), localJob()
		far.Venue, newer.PiVersion = "podman", "0.59.0"
		for _, c := range []struct {
			s      *store.Store
			job    store.Job
			reason gates.Reason
		}{
			{e.s, far, gates.VenueChanged},
			{e.s, newer, gates.PiVersionChanged},
			{e.with(gates.Bounds{MaxResumeChain: 2}), localJob(), gates.ResumeChainTooLong},
			{e.with(gates.Bounds{MaxContextPct: 75}), localJob(), gates.ContextTooFull},
			{e.with(gates.Bounds{MaxContextPct: 76}), localJob(), gates.Resumed},
		} {
			sess, _ := e.resolveOn(c.s, key, c.job)
			e.want(sess, c.reason == gates.Resumed, c.reason)
		}
		// Without a venue stamp a key is "local", the legacy meaning.
		k := store.Key("github", "legacy", "no venue")
		if err := pl.Plant(k, data, Stamps{PiVersion: ptr(piVersion)}); err != nil {
			e.t.Fatal(err)
		}
		sess, _ = e.resolve(k, localJob())
		e.want(sess, true, gates.Resumed)
		sess, _ = e.resolve(k, far)
		e.want(sess, false, gates.VenueChanged)
	}},
	{"legacy/the first promotion continues a planted key's chain", func(e *env) {
		pl, ok := e.inst.(Planter)
		if !ok {
			e.t.Skip("the instance is no storetest.Planter: it has no older layout")
		}
		if err := pl.Plant(key, turn(header(start), "legacy", 10), Stamps{PiVersion: ptr(piVersion), Chain: ptr(uint64(2))}); err != nil {
			e.t.Fatal(err)
		}
		_, res := e.run(key, "new")
		if sc, _ := e.record(key); res.Gen != 1 || sc.ResumeChain == nil || *sc.ResumeChain != 3 {
			e.fatalf("first promotion: %+v, chain %v; want gen 1, chain 3", res, sc.ResumeChain)
		}
		e.holds(key, "new", 1)
	}},
}
