package store

import (
	"context"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
	"sessdb/store/legacy"
)

// Layout is how a key dir keeps its sidecars.
type Layout string

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
	Name    string `json:"key"`
	Problem string `json:"problem"` // set when the entry is not a usable key dir
	Layout  Layout `json:"layout"`

	Transcript *TranscriptReport `json:"transcript"`

	MetaError     string     `json:"meta_error"`
	Schema        uint64     `json:"schema"`
	Created       *time.Time `json:"created"`
	Gen           uint64     `json:"-"` // record.gen
	LastPromotion *time.Time `json:"-"` // record.promoted_at
	CRC32C        *uint64    `json:"-"` // record.crc32c
	RecordBytes   *int64     `json:"-"` // record.bytes: the transcript size the record describes

	PiVersion   *string         `json:"pi_version"`
	Venue       *string         `json:"venue"`
	ResumeChain *uint64         `json:"resume_chain"`
	Context     *ContextReport  `json:"context"`
	Pending     *PendingReport  `json:"pending"`
	History     []HistoryReport `json:"history"`
	LegacyFiles []string        `json:"legacy_files"`
	// LegacyBytes is the legacy files' total size, with
	// InspectOptions.LegacyBytes and legacy files present; nil otherwise.
	// stats sums it; dump does not print it.
	LegacyBytes *int64 `json:"-"`

	MetaPages *MetaPagesReport `json:"meta_pages"`
	Verify    *VerifyReport    `json:"verify"`
	Verdict   *VerdictReport   `json:"verdict"`
}

// TranscriptReport describes current.jsonl from its stat and its first
// line; the contents are never reported.
type TranscriptReport struct {
	Regular         bool       `json:"regular"`
	Bytes           int64      `json:"bytes"`
	ModTime         time.Time  `json:"mtime"`
	HeaderOK        bool       `json:"header_ok"`
	HeaderID        string     `json:"header_id"`
	HeaderVersion   int64      `json:"header_version"`
	HeaderTimestamp string     `json:"header_timestamp"`
	HeaderTime      *time.Time `json:"header_time"` // HeaderTimestamp as the age rung reads it; nil if unreadable
}

// ContextReport is the last context reading. Pct is tokens*100/window
// rounded down, the figure the context rung compares with its bound.
type ContextReport struct {
	Tokens int64  `json:"tokens"`
	Window int64  `json:"window"`
	Model  string `json:"model"`
	Pct    *int64 `json:"pct"` // nil when the window is not positive
	// OverWindow flags a reading above its window: pi's print mode never
	// compacts at the end of a run, so a promoted reading can exceed it.
	OverWindow bool `json:"over_window"`
}

// PendingReport is a promotion that committed but was not renamed into
// place yet.
type PendingReport struct {
	Tmp    string `json:"tmp"`
	Bytes  int64  `json:"bytes"`
	CRC32C uint64 `json:"-"` // 8 hex digits in JSON
	Gen    uint64 `json:"gen"`
}

// HistoryReport is one audit history entry.
type HistoryReport struct {
	Gen uint64    `json:"gen"`
	At  time.Time `json:"at"`
	// Outcome is "promoted", or the refusal recorded: "superseded",
	// "transcript-rewritten", "run-incomplete".
	Outcome  string `json:"outcome"`
	Resumed  bool   `json:"resumed"`
	Reason   string `json:"reason"`
	Bytes    int64  `json:"bytes"`
	Chain    uint64 `json:"chain"`
	Job      string `json:"job"`
	Ticket   string `json:"ticket"`
	BaseGen  uint64 `json:"base_gen"`
	Run      string `json:"run"`
	TornTail bool   `json:"torn_tail"`
	// Rewritten: promoted with --allow-rewrite over a rewritten prefix.
	Rewritten bool `json:"rewritten"`
}

// InspectOptions says what InspectWith reports. The zero value reports
// every entry without history, without reading transcripts whole, and with
// the verdict of an unknown job.
type InspectOptions struct {
	History int    // how many of each key's last history entries to report
	Only    string // report this one name under the root instead of all
	// Verify reads each transcript whole and checks its size and CRC32C
	// against the record; without it only the first line is read.
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
// ctx ends it early, after the reports already read have been visited.
func (s *Store) InspectWith(ctx context.Context, opts InspectOptions, visit func(KeyReport) error) error {
	names, err := s.rootNames(opts.Only)
	if err != nil {
		return err
	}
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
		r, err := s.inspectKey(ctx, names[i], opts)
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

// inspectKey reports one name under the root. Its error is ctx's alone,
// when ctx ended a verify in the middle of a transcript.
func (s *Store) inspectKey(ctx context.Context, name string, opts InspectOptions) (KeyReport, error) {
	r := KeyReport{Name: name}
	if !ValidKey(name) {
		r.Problem = "not a key"
		return r, nil
	}
	k, err := s.openKey(name, "")
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
	r.LegacyFiles = legacyFiles(k)
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
	if opts.Verify {
		if r.Verify, err = k.verify(ctx, s.opts.Bounds.MaxBytes); err != nil {
			return r, err
		}
	}
	r.Verdict = s.verdict(k, opts.Job, r.Verify)
	switch {
	case k.metaErr != nil:
		r.MetaError = k.metaErr.Error()
	case k.meta != nil:
		s.reportDB(k, &r, opts.History)
	default:
		r.Venue = stampValue(k.obs.Venue)
		r.PiVersion = stampValue(k.obs.PiVersion)
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

func (s *Store) reportDB(k *keyDir, r *KeyReport, history int) {
	sc := k.sidecars
	r.PiVersion, r.Venue, r.ResumeChain = sc.PiVersion, sc.Venue, sc.ResumeChain
	if c := sc.Context; c != nil {
		r.Context = contextReport(c.Tokens, c.Window, c.Model)
	}
	if p := k.inFlight(); p != nil {
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

func contextReport(tokens, window int64, model string) *ContextReport {
	c := &ContextReport{Tokens: tokens, Window: window, Model: model, OverWindow: window > 0 && tokens > window}
	if window > 0 && tokens >= 0 && tokens <= (1<<63-1)/100 {
		pct := tokens * 100 / window
		c.Pct = &pct
	}
	return c
}

func present(k *keyDir, name string) bool {
	_, err := fsat.LstatAt(k.dir, name)
	return err == nil
}

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
