package store

import (
	"encoding/json"
	"time"
)

// The JSON of the reports is sessdb's vocabulary (docs/json.md, which a
// test checks every command's output against): every documented field is
// always present; an absent or unknown value is null, never "", 0 or -1
// standing in for it; a list is [] when empty; a CRC32C is 8 lowercase hex
// digits (Checksum); times are RFC 3339 UTC. The Go fields keep their
// zero-value conventions, and these types apply the rules on the way out.

// MarshalJSON writes r as dump --json's entry object.
func (r KeyReport) MarshalJSON() ([]byte, error) {
	out := keyJSON{
		Key: r.Name, Problem: str(r.Problem), Layout: str(string(r.Layout)), MetaError: str(r.MetaError),
		Schema: num(r.Schema), Created: r.Created,
		PiVersion: stamp(r.PiVersion), Venue: stamp(r.Venue), ResumeChain: r.ResumeChain,
		LegacyFiles: list(r.LegacyFiles), LegacyUnreadable: list(r.LegacyUnreadable), MetaPages: r.MetaPages, Verify: r.Verify, Verdict: r.Verdict,
	}
	if t := r.Transcript; t != nil {
		out.Transcript = &transcriptJSON{
			Regular: t.Regular, Bytes: t.Bytes, MTime: jsonTime(t.ModTime), HeaderOK: t.HeaderOK,
			HeaderID: str(t.HeaderID), HeaderTimestamp: str(t.HeaderTimestamp),
		}
		if h := t.HeaderTime; h != nil {
			at := jsonTime(*h)
			out.Transcript.HeaderTime = &at
		}
		if t.HeaderVersion != 0 {
			out.Transcript.HeaderVersion = &t.HeaderVersion
		}
	}
	if r.LastPromotion != nil && r.CRC32C != nil && r.RecordBytes != nil {
		out.Record = &recordJSON{Gen: r.Gen, Bytes: *r.RecordBytes, CRC32C: Checksum(*r.CRC32C), PromotedAt: r.LastPromotion.UTC()}
	}
	if c := r.Context; c != nil {
		out.Context = c
	}
	if p := r.Pending; p != nil {
		out.Pending = &pendingJSON{Tmp: p.Tmp, Bytes: p.Bytes, CRC32C: Checksum(p.CRC32C), Gen: p.Gen}
	}
	out.History = make([]historyJSON, len(r.History))
	for i, e := range r.History {
		out.History[i] = historyJSON{
			Gen: e.Gen, At: e.At.UTC(), Outcome: e.Outcome, Resumed: e.Resumed, Reason: e.Reason, Bytes: e.Bytes,
			Chain: e.Chain, Job: str(e.Job), Ticket: str(e.Ticket), BaseGen: num(e.BaseGen), Run: str(e.Run),
			TornTail: e.TornTail, Rewritten: e.Rewritten,
		}
	}
	return json.Marshal(out)
}

// jsonTime is t in UTC, held within the years RFC 3339 can write (0 to
// 9999), at the nearest end: a file's mtime set by a clock gone wrong, or
// a header timestamp whose offset takes it past 9999 (the agent writes
// it), would otherwise fail the entry's marshalling, and with it the
// whole walk's output. The times sessdb records itself (Unix nanoseconds)
// are always within it.
func jsonTime(t time.Time) time.Time {
	first, last := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	switch t = t.UTC(); {
	case t.Before(first):
		return first
	case t.After(last):
		return last
	}
	return t
}

type keyJSON struct {
	Key              string           `json:"key"`
	Problem          *string          `json:"problem"`
	Layout           *string          `json:"layout"`
	Transcript       *transcriptJSON  `json:"transcript"`
	MetaError        *string          `json:"meta_error"`
	Schema           *uint64          `json:"schema"`
	Created          *time.Time       `json:"created"`
	Record           *recordJSON      `json:"record"`
	PiVersion        *string          `json:"pi_version"`
	Venue            *string          `json:"venue"`
	ResumeChain      *uint64          `json:"resume_chain"`
	Context          *ContextReport   `json:"context"`
	Pending          *pendingJSON     `json:"pending"`
	History          []historyJSON    `json:"history"`
	LegacyFiles      []string         `json:"legacy_files"`
	LegacyUnreadable []string         `json:"legacy_unreadable"`
	MetaPages        *MetaPagesReport `json:"meta_pages"`
	Verify           *VerifyReport    `json:"verify"`
	Verdict          *VerdictReport   `json:"verdict"`
}

type transcriptJSON struct {
	Regular         bool       `json:"regular"`
	Bytes           int64      `json:"bytes"`
	MTime           time.Time  `json:"mtime"`
	HeaderOK        bool       `json:"header_ok"`
	HeaderID        *string    `json:"header_id"`
	HeaderVersion   *int64     `json:"header_version"`
	HeaderTimestamp *string    `json:"header_timestamp"`
	HeaderTime      *time.Time `json:"header_time"`
}

// recordJSON is the identity of the transcript a meta.db records: the
// same object wherever a record is shown.
type recordJSON struct {
	Gen        uint64    `json:"gen"`
	Bytes      int64     `json:"bytes"`
	CRC32C     Checksum  `json:"crc32c"`
	PromotedAt time.Time `json:"promoted_at"`
}

// MarshalJSON writes c as the context object of every command (docs/json.md):
// tokens, window, model (null when unstamped), pct (null when the window
// is not positive) and over_window.
func (c ContextReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Tokens     int64   `json:"tokens"`
		Window     int64   `json:"window"`
		Model      *string `json:"model"`
		Pct        *int64  `json:"pct"`
		OverWindow bool    `json:"over_window"`
	}{c.Tokens, c.Window, str(c.Model), c.Pct, c.OverWindow})
}

type pendingJSON struct {
	Tmp    string   `json:"tmp"`
	Bytes  int64    `json:"bytes"`
	CRC32C Checksum `json:"crc32c"`
	Gen    uint64   `json:"gen"`
}

type historyJSON struct {
	Gen       uint64    `json:"gen"`
	At        time.Time `json:"at"`
	Outcome   string    `json:"outcome"`
	Resumed   bool      `json:"resumed"`
	Reason    string    `json:"reason"`
	Bytes     int64     `json:"bytes"`
	Chain     uint64    `json:"chain"`
	Job       *string   `json:"job"`
	Ticket    *string   `json:"ticket"`
	BaseGen   *uint64   `json:"base_gen"`
	Run       *string   `json:"run"`
	TornTail  bool      `json:"torn_tail"`
	Rewritten bool      `json:"rewritten"`
}

// MarshalJSON writes m as dump's meta_pages object: the page size, high
// water mark and active page are null where no meta page could be read.
func (m MetaPagesReport) MarshalJSON() ([]byte, error) {
	out := struct {
		Bytes     int64            `json:"bytes"`
		PageSize  *int             `json:"page_size"`
		HighWater *int64           `json:"high_water"`
		Active    *int             `json:"active"`
		Fallback  bool             `json:"fallback"`
		Error     *string          `json:"error"`
		Pages     []MetaPageReport `json:"pages"`
	}{Bytes: m.Bytes, Fallback: m.Fallback, Error: str(m.Error), Pages: list(m.Pages)}
	if m.PageSize > 0 {
		out.PageSize = &m.PageSize
	}
	if m.Active >= 0 {
		out.Active, out.HighWater = &m.Active, &m.HighWater
	}
	return json.Marshal(out)
}

// MarshalJSON writes p as one of meta_pages' pages.
func (p MetaPageReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Txid  uint64  `json:"txid"`
		Valid bool    `json:"valid"`
		Error *string `json:"error"`
		Pages uint64  `json:"pages"`
	}{p.Txid, p.Valid, str(p.Error), p.Pages})
}

// MarshalJSON writes v as dump's verify object: crc32c is null when no
// byte was read.
func (v VerifyReport) MarshalJSON() ([]byte, error) {
	out := struct {
		Result string    `json:"result"`
		Bytes  int64     `json:"bytes"`
		CRC32C *Checksum `json:"crc32c"`
		Detail *string   `json:"detail"`
	}{Result: v.Result, Bytes: v.Bytes, Detail: str(v.Detail)}
	if v.Bytes > 0 {
		sum := Checksum(v.CRC32C)
		out.CRC32C = &sum
	}
	return json.Marshal(out)
}

// MarshalJSON writes v as dump's verdict object.
func (v VerdictReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Reason    string   `json:"reason"`
		Needs     []string `json:"needs"`
		IfMatched *string  `json:"if_matched"`
	}{v.Reason, list(v.Needs), str(v.IfMatched)})
}

// MarshalJSON writes f as check --json's finding object: key is null for
// a name that is not in a key dir, repair null without --repair.
func (f Finding) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Path     string   `json:"path"`
		Key      *string  `json:"key"`
		Kind     Kind     `json:"kind"`
		Severity Severity `json:"severity"`
		Detail   string   `json:"detail"`
		Repair   *string  `json:"repair"`
		Repaired bool     `json:"repaired"`
		Remains  bool     `json:"remains"`
	}{f.Path, str(f.Key), f.Kind, f.Severity, f.Detail, str(f.Repair), f.Repaired, f.Remains})
}

// str is s, or null for "".
func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// num is n, or null for 0 where 0 means "none".
func num(n uint64) *uint64 {
	if n == 0 {
		return nil
	}
	return &n
}

// stamp is a stamp as JSON shows it: null when absent, and null for an
// empty pi-version stamp too, which means "unknown" (both never resume).
func stamp(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

// list is s, or [] for nil.
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
