package store

import (
	"context"
	"fmt"
	"os"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
	"sessdb/store/legacy"
)

// Layout is how a key dir keeps its sidecars.
type Layout string

// The layouts, as dump and stats print them.
const (
	LayoutDB     Layout = "db"     // meta.db only
	LayoutLegacy Layout = "legacy" // legacy sidecar files only
	LayoutMixed  Layout = "mixed"  // meta.db (authoritative) with legacy files beside it
	LayoutEmpty  Layout = "empty"  // neither
)

// KeyReport is everything Inspect knows about one entry under the root.
// Pointer fields are nil where the value is absent. It marshals as dump
// --json's entry object (report_json.go; docs/json.md lists every field,
// and the names are a contract: fields may be added, never renamed). The
// tags let that object decode back, except the record's fields, which it
// nests under "record".
type KeyReport struct {
	Name    string `json:"key"`     // the name under the root, a key or not
	Problem string `json:"problem"` // set when the entry is not a usable key dir
	Layout  Layout `json:"layout"`  // "" with a Problem

	// Transcript is current.jsonl as found; nil when there is none.
	Transcript *TranscriptReport `json:"transcript"`

	// MetaError says why meta.db could not be read (a resolve cold-starts
	// as meta-unreadable); the fields read from it are then absent.
	MetaError string `json:"meta_error"`
	// Schema and Created are meta.db's schema version and creation time
	// (host clock); 0 and nil without a readable meta.db.
	Schema        uint64     `json:"schema"`
	Created       *time.Time `json:"created"` // UTC
	Gen           uint64     `json:"-"`       // record.gen
	LastPromotion *time.Time `json:"-"`       // record.promoted_at
	CRC32C        *uint64    `json:"-"`       // record.crc32c
	RecordBytes   *int64     `json:"-"`       // record.bytes: the transcript size the record describes

	// PiVersion and Venue are the stamps, from meta.db or the legacy
	// files; an unreadable legacy stamp is "(unreadable)", so that dump
	// tells it from an absent one (an absent venue means "local", an
	// unreadable one matches no venue).
	PiVersion *string `json:"pi_version"`
	Venue     *string `json:"venue"` // nil: absent, which means "local"
	// ResumeChain is the consecutive host deliveries; nil when no record
	// or legacy file holds one.
	ResumeChain *uint64 `json:"resume_chain"`
	// Context is the last context reading; nil when there is none.
	Context *ContextReport `json:"context"`
	// Pending is a promotion committed but not renamed into place; nil
	// when none is in flight.
	Pending *PendingReport `json:"pending"`
	// History is the key's last InspectOptions.History entries, oldest
	// first.
	History []HistoryReport `json:"history"`
	// LegacyFiles lists the legacy sidecar files in the key dir, sorted:
	// beside a meta.db they are ignored (Layout mixed).
	LegacyFiles []string `json:"legacy_files"`
	// LegacyUnreadable lists the legacy sidecar files of a legacy key
	// that are there but give no value by the legacy rules (a read that
	// failed, a link, not a regular file, empty, oversized), in the order
	// venue, pi-version, resume-chain, context: a resolve reads each as
	// the legacy store did (a stamp "(unreadable)", a chain 0, a context
	// none), and without it dump showed the last two as a chain of 0 and
	// no reading. nil beside a meta.db, whose legacy files are ignored.
	LegacyUnreadable []string `json:"legacy_unreadable"`
	// LegacyBytes is the legacy files' total size, with
	// InspectOptions.LegacyBytes and legacy files present; nil otherwise.
	// stats sums it; dump does not print it.
	LegacyBytes *int64 `json:"-"`
	// EtcdBytes is what a fleet's etcd holds for the key, its record's
	// and history entries' etcd keys and values, where a fleet's walk
	// read them with its history (fleet.InspectOptions.History); nil on
	// a sessions root. stats sums it; dump does not print it.
	EtcdBytes *int64 `json:"-"`
	// HistoryFull is set where a fleet's walk read a full ring of history
	// entries (etcdmeta.HistoryLimit), counting those that do not decode
	// and are not in History: stats counts the key's ring as full though
	// History holds fewer. A sessions root's full ring is len(History).
	// dump does not print it.
	HistoryFull bool `json:"-"`

	// MetaPages shows meta.db's two bbolt meta pages; nil without a
	// meta.db.
	MetaPages *MetaPagesReport `json:"meta_pages"`
	// Verify is what a resolve would copy, read whole against its record,
	// with InspectOptions.Verify; nil otherwise.
	Verify *VerifyReport `json:"verify"`
	// Verdict is what a resolve would get now; nil for a name that is not
	// a key.
	Verdict *VerdictReport `json:"verdict"`
}

// TranscriptReport describes current.jsonl from its stat and its first
// line; the contents are never reported.
type TranscriptReport struct {
	Regular         bool       `json:"regular"`          // a regular file (a link is never followed)
	Bytes           int64      `json:"bytes"`            // its size
	ModTime         time.Time  `json:"mtime"`            // its mtime: a legacy key's only clock
	HeaderOK        bool       `json:"header_ok"`        // the first line is a pi session header
	HeaderID        string     `json:"header_id"`        // the header's id
	HeaderVersion   int64      `json:"header_version"`   // the header's format version; 0 when absent
	HeaderTimestamp string     `json:"header_timestamp"` // the header's timestamp, as written
	HeaderTime      *time.Time `json:"header_time"`      // HeaderTimestamp as the age rung reads it; nil if unreadable
}

// ContextReport is the last context reading. Pct is tokens*100/window
// rounded down, the figure the context rung compares with its bound.
type ContextReport struct {
	Tokens int64  `json:"tokens"` // tokens in use
	Window int64  `json:"window"` // the model's context window
	Model  string `json:"model"`  // the model that measured it, provider/id; "" when unstamped
	// Pct is nil when the window is not positive or the tokens negative
	// (no measurement, as the context rung reads it), or when the tokens
	// are too many to multiply by 100 in 64 bits (the rung multiplies in
	// 128, and still judges them).
	Pct *int64 `json:"pct"`
	// OverWindow flags a reading above its window: pi's print mode never
	// compacts at the end of a run, so a promoted reading can exceed it.
	OverWindow bool `json:"over_window"`
}

// PendingReport is a promotion that committed but was not renamed into
// place yet.
type PendingReport struct {
	Tmp    string `json:"tmp"`   // the temp's name in the key dir
	Bytes  int64  `json:"bytes"` // its size, as committed
	CRC32C uint64 `json:"-"`     // its CRC32C as committed; 8 hex digits in JSON
	Gen    uint64 `json:"gen"`   // the generation it becomes
}

// HistoryReport is one audit history entry.
type HistoryReport struct {
	Gen uint64    `json:"gen"` // the generation promoted, or for a refusal the one the key held
	At  time.Time `json:"at"`  // when, by the host clock
	// Outcome is "promoted", or the refusal recorded: "superseded",
	// "transcript-rewritten", "run-incomplete"; or the operator's
	// AcceptedOutcome, or "reaping" (a reap began removing the key).
	Outcome  string `json:"outcome"`
	Resumed  bool   `json:"resumed"`   // the job was resolved warm
	Reason   string `json:"reason"`    // the job's resolve reason (for accepted, the cold start it settles)
	Bytes    int64  `json:"bytes"`     // the transcript's size
	Chain    uint64 `json:"chain"`     // the resume chain after it
	Job      string `json:"job"`       // the job id resolve was given
	Ticket   string `json:"ticket"`    // the ticket id; "" from before the job contract
	BaseGen  uint64 `json:"base_gen"`  // the generation of the ticket's base
	Run      string `json:"run"`       // the run's shape; "" when not recorded
	TornTail bool   `json:"torn_tail"` // its last line had no newline (one was added)
	// Rewritten: promoted with --allow-rewrite over a rewritten prefix.
	Rewritten bool `json:"rewritten"`
}

// InspectOptions says what InspectWith reports. The zero value reports
// every entry without history, without reading transcripts whole, and with
// the verdict of an unknown job.
type InspectOptions struct {
	History int    // how many of each key's last history entries to report
	Only    string // report this one name under the root instead of all
	// Verify reads what a resolve would copy of each key whole (a pending
	// promotion's temp, and the transcript in place a resolve falls back
	// to) and checks its size and CRC32C as the copy would; without it
	// only the first line of each is read, and the verdict knows the
	// files by their sizes.
	Verify bool
	// Job is the profile the verdict is judged for. nil: the rungs that
	// compare with the job (venue, pi version, model) are not guessed, and
	// a verdict that depends on them is "?".
	Job *Job
	// Workers bounds the goroutines that read keys; 0 means a default
	// sized to the machine. Reports are delivered in name order whatever
	// the number.
	Workers int
	// Progress, when set, is called after each report with the count
	// delivered and the total.
	Progress func(done, total int)
	// LegacyBytes reports the total size of each key's legacy files
	// (KeyReport.LegacyBytes), one lstat each, for Stats.
	LegacyBytes bool
}

// Inspect reports every entry under the root, in name order, to visit,
// with up to history entries of each key's audit history. It is
// InspectWith with only History set.
func (s *Store) Inspect(history int, visit func(KeyReport) error) error {
	return s.InspectWith(context.Background(), InspectOptions{History: history}, visit)
}

// InspectWith reports the entries under the root in name order to visit.
// It is read-only: it creates and changes nothing, holds each key's shared
// lock only while it reads that key, and leaves every byte and mtime as it
// was. A visit error stops the walk and is returned; so is ctx's error when
// ctx ends it early, after the reports already read have been visited. A
// nil visit is no callback.
func (s *Store) InspectWith(ctx context.Context, opts InspectOptions, visit func(KeyReport) error) error {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if visit == nil {
		visit = func(KeyReport) error { return nil }
	}
	// Every name is read through the root it was listed from: a root
	// renamed during the walk, another made at its path, must not give
	// figures of two directories.
	root, names, err := s.listRoot(opts.Only)
	if err != nil {
		return err
	}
	defer root.Close()
	deliver := func(r KeyReport) error { return visit(r) }
	done := 0
	if opts.Progress != nil {
		deliver = func(r KeyReport) error {
			err := visit(r)
			done++
			opts.Progress(done, len(names))
			return err
		}
	}
	unroot := s.unrooter()
	type result struct {
		r   KeyReport
		err error // ctx's, when it ended a verify half-way: the key is not reported
	}
	work := func(i int) result {
		r, err := s.inspectKey(ctx, root, names[i], opts)
		r.Problem, r.MetaError = unroot.Replace(r.Problem), unroot.Replace(r.MetaError)
		if r.Verify != nil {
			r.Verify.Detail = unroot.Replace(r.Verify.Detail)
		}
		return result{r, err}
	}
	_, err = walk.Ordered(ctx, len(names), walk.Workers(opts.Workers), work, func(res result) error {
		if res.err != nil {
			return res.err
		}
		return deliver(res.r)
	})
	return err
}

// reapAtWork reports whether the reap-owned dir name is a reap's at work,
// not one a killed reap left: read under its meta.db's shared lock, which
// a reap holds until it has removed the file, it is found gone (as check's
// examineOwned finds it).
func (s *Store) reapAtWork(root *os.File, name string) bool {
	kd, d, _, _, gone, _ := s.reapedStateSettled(root, name)
	if d != nil {
		d.Close()
	}
	if kd != nil {
		kd.Close()
	}
	return gone
}

// inspectKey reports one name under the root. Its error is ctx's alone,
// when ctx ended a verify in the middle of a transcript.
func (s *Store) inspectKey(ctx context.Context, root *os.File, name string, opts InspectOptions) (KeyReport, error) {
	r := KeyReport{Name: name}
	if !ValidKey(name) {
		r.Problem = "not a key"
		// A reap's or a quarantine's dir is the store's own and carries
		// a key: "not a key" alone, as for a README, would hide a key an
		// interrupted reap left cold-starting absent until it is finished.
		if st, err := fsat.LstatAt(root, name); err == nil && fsat.IsDir(&st) {
			if k, ok := ReapedKey(name); ok {
				if s.reapAtWork(root, name) {
					return r, nil // gone under its reap, as a name removed since the listing
				}
				r.Problem = "interrupted reap of key " + k + ": run sessdb check"
			} else if k, ok := QuarantinedKey(name); ok {
				r.Problem = "quarantined dir of key " + k + " (check --quarantine)"
			}
		}
		return r, nil
	}
	k, err := s.openKeyIn(root, name, "")
	switch {
	case err != nil:
		r.Problem = err.Error()
		return r, nil
	case k.missing:
		r.Problem = "no key dir"
		r.Verdict = &VerdictReport{Reason: string(gates.Absent)}
		return r, nil
	case k.notDir:
		r.Problem = "not a real directory (a link, or not a directory)"
		r.Verdict = &VerdictReport{Reason: string(gates.NotARegularFile)}
		return r, nil
	}
	defer k.close()
	if k.locked {
		r.Problem = "locked: the key's lock was not had in time"
		r.Verdict = &VerdictReport{Reason: string(gates.Locked)}
		return r, nil
	}
	if r.LegacyFiles, err = legacyFiles(k); err != nil {
		r.Problem = err.Error()
		return r, nil
	}
	if opts.LegacyBytes && len(r.LegacyFiles) > 0 {
		r.LegacyBytes = legacyBytes(k, r.LegacyFiles)
	}
	r.Layout = k.layout
	if k.layout == LayoutDB && len(r.LegacyFiles) > 0 {
		r.Layout = LayoutMixed
	}
	if k.layout == LayoutLegacy && len(r.LegacyFiles) == 0 && !k.obs.Transcript.Exists {
		r.Layout = LayoutEmpty
	}
	if t := k.obs.Transcript; t.Exists {
		r.Transcript = &TranscriptReport{Regular: t.Regular, Bytes: t.Size, ModTime: t.ModTime, HeaderOK: k.obs.Header.IsSession}
		if k.headerErr == nil {
			r.Transcript.HeaderID, r.Transcript.HeaderVersion, r.Transcript.HeaderTimestamp = k.header.ID, k.header.Version, k.header.Timestamp
		}
		if h := k.obs.Header; h.TimestampOK {
			ts := h.Timestamp.UTC()
			r.Transcript.HeaderTime = &ts
		}
	}
	if k.layout == LayoutDB {
		r.MetaPages = keyMetaPages(k)
	}
	// The verdict, and what --verify reads, are a resolve's: on a
	// promotion committed but not yet renamed into place a resolve copies
	// its temp, so the ladder judges the temp and verify reads it, and
	// where a resolve falls back to the file in place (a temp not what its
	// commit recorded) so do they (everything above reports the file in
	// place).
	sv, err := s.judgeServed(ctx, k, opts.Job, opts.Verify)
	if err != nil {
		return r, err
	}
	if sv.pendingErr != nil {
		r.Problem = fmt.Sprintf("pending promotion's temp: %v", sv.pendingErr)
	}
	r.Verdict = sv.verdict
	if opts.Verify {
		r.Verify = sv.verify
	}
	switch {
	case k.metaErr != nil:
		r.MetaError = k.metaErr.Error()
	case k.meta != nil && k.layout == LayoutDB:
		// (An empty meta.db, a migration or first promotion that died
		// before its commit, leaves the key legacy: its stamps are the
		// legacy files', as the resolve reads them.)
		s.reportDB(k, &r, opts.History)
	default:
		r.Venue = stampValue(k.obs.Venue)
		r.PiVersion = stampValue(k.obs.PiVersion)
		r.LegacyUnreadable = k.legacy.Unreadable
		if present(k, legacy.ResumeChainName) {
			c := k.obs.ResumeChain
			r.ResumeChain = &c
		}
		if c := k.obs.Context; c != nil {
			r.Context = contextReport(c.Tokens, c.Window, c.Model)
		}
	}
	return r, nil
}

// reportDB fills r from k's meta.db, already open under the shared lock.
// A meta or history record that does not decode leaves what was read
// before it, and MetaError says why the rest is missing.
func (s *Store) reportDB(k *keyDir, r *KeyReport, history int) {
	sc := k.sidecars
	r.PiVersion, r.Venue, r.ResumeChain = sc.PiVersion, sc.Venue, sc.ResumeChain
	if c := sc.Context; c != nil {
		r.Context = contextReport(c.Tokens, c.Window, c.Model)
	}
	if p, err := k.inFlight(); err != nil && r.Problem == "" {
		r.Problem = fmt.Sprintf("pending promotion's temp: %v", err)
	} else if p != nil {
		r.Pending = &PendingReport{Tmp: p.Tmp, Bytes: p.Size, CRC32C: p.CRC32C, Gen: p.Gen}
	}
	if t := sc.Transcript; t != nil {
		at := time.Unix(0, t.PromotedAt).UTC()
		sum, size := t.CRC32C, t.Size
		r.Gen, r.LastPromotion, r.CRC32C, r.RecordBytes = t.Gen, &at, &sum, &size
	}
	err := k.meta.View(func(tx *db.Tx) error {
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		created := time.Unix(0, m.Created).UTC()
		r.Schema, r.Created = m.Schema, &created
		if history <= 0 {
			return nil
		}
		hs, err := tx.History(history)
		for _, h := range hs {
			outcome := h.Outcome
			if outcome == "" {
				outcome = string(gates.Promoted)
			}
			r.History = append(r.History, HistoryReport{
				Gen: h.Gen, At: time.Unix(0, h.At).UTC(), Outcome: outcome, Resumed: h.Resumed, Reason: h.Reason,
				Bytes: h.Bytes, Chain: h.Chain, Job: h.Job, Ticket: h.Ticket, BaseGen: h.BaseGen, Run: h.Run,
				TornTail: h.TornTail, Rewritten: h.Rewritten,
			})
		}
		return err
	})
	if err != nil {
		r.MetaError = err.Error()
	}
}

// NewContextReport is the report of a reading of tokens out of window,
// stamped with model: the one context object of every command's JSON.
func NewContextReport(tokens, window int64, model string) *ContextReport {
	return contextReport(tokens, window, model)
}

// contextReport computes Pct as the context rung does, tokens*100/window
// rounded down; a record is foreign input, so the multiplication is
// guarded against overflow instead of trusted.
func contextReport(tokens, window int64, model string) *ContextReport {
	c := &ContextReport{Tokens: tokens, Window: window, Model: model, OverWindow: window > 0 && tokens > window}
	if window > 0 && tokens >= 0 && tokens <= (1<<63-1)/100 {
		pct := tokens * 100 / window
		c.Pct = &pct
	}
	return c
}

// present reports whether name exists in k's dir. A legacy resume chain
// reads as 0 both when its file is absent and when it is unreadable;
// dump shows only the second.
func present(k *keyDir, name string) bool {
	_, err := fsat.LstatAt(k.dir, name)
	return err == nil
}

// stampValue is a stamp as dump shows it: nil when absent, its value, or
// "(unreadable)" for a legacy file the legacy rules cannot read.
func stampValue(st gates.Stamp) *string {
	switch st.State {
	case gates.StampPresent:
		v := st.Value
		return &v
	case gates.StampUnreadable:
		v := "(unreadable)"
		return &v
	}
	return nil
}

// HistoryLimitForDump is the most history entries a key keeps, and so the
// most Inspect can report.
const HistoryLimitForDump = db.HistoryLimit
