package fleet

import (
	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/store"
)

// The store's protocols speak db's types; etcd keeps etcdmeta's. The two
// carry the same fields; the record adds the transcript's file name.

func sidecarsOf(r etcdmeta.Record) db.Sidecars {
	sc := db.Sidecars{PiVersion: r.PiVersion, Venue: r.Venue, ResumeChain: r.ResumeChain}
	if t := r.Transcript; t != nil {
		sc.Transcript = &db.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: t.CRC32C, PromotedAt: t.PromotedAt}
	}
	if c := r.Context; c != nil {
		sc.Context = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
	return sc
}

// recordOf is the record of sc whose transcript is the file name.
func recordOf(sc db.Sidecars, name string) etcdmeta.Record {
	r := etcdmeta.Record{PiVersion: sc.PiVersion, Venue: sc.Venue, ResumeChain: sc.ResumeChain}
	if t := sc.Transcript; t != nil {
		r.Transcript = &etcdmeta.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: t.CRC32C, PromotedAt: t.PromotedAt, File: name}
	}
	if c := sc.Context; c != nil {
		r.Context = &etcdmeta.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
	return r
}

func historyOf(h []etcdmeta.HistoryEntry) []db.HistoryEntry {
	if h == nil {
		return nil
	}
	out := make([]db.HistoryEntry, len(h))
	for i, e := range h {
		out[i] = db.HistoryEntry{Seq: e.Seq, Gen: e.Gen, At: e.At, Resumed: e.Resumed, Reason: e.Reason,
			Bytes: e.Bytes, Chain: e.Chain, Job: e.Job, TornTail: e.TornTail, Outcome: e.Outcome,
			Ticket: e.Ticket, Run: e.Run, Rewritten: e.Rewritten, BaseGen: e.BaseGen, CRC32C: e.CRC32C}
	}
	return out
}

func entryOf(e db.HistoryEntry) etcdmeta.HistoryEntry {
	return etcdmeta.HistoryEntry{Gen: e.Gen, At: e.At, Resumed: e.Resumed, Reason: e.Reason,
		Bytes: e.Bytes, Chain: e.Chain, Job: e.Job, TornTail: e.TornTail, Outcome: e.Outcome,
		Ticket: e.Ticket, Run: e.Run, Rewritten: e.Rewritten, BaseGen: e.BaseGen, CRC32C: e.CRC32C}
}

// baseOf is what a key whose record is r, at mod revision rev, holds, as
// a ticket records it.
func baseOf(r etcdmeta.Record, rev etcdmeta.Rev) store.Base {
	t := r.Transcript
	if t == nil {
		return store.Base{}
	}
	return store.Base{Gen: t.Gen, Size: t.Size, CRC32C: store.Checksum(t.CRC32C), Rev: int64(rev)}
}

func stampOf(p *string) gates.Stamp {
	if p == nil {
		return gates.Stamp{State: gates.StampAbsent}
	}
	return gates.Stamp{State: gates.StampPresent, Value: *p}
}
