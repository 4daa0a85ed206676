package store

import (
	"sort"
	"strings"
	"time"

	"sessdb/db"
	"sessdb/gates"
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
// Pointer fields are nil where the value is absent.
type KeyReport struct {
	Name    string `json:"key"`
	Problem string `json:"problem,omitempty"` // set when the entry is not a usable key dir
	Layout  Layout `json:"layout,omitempty"`

	Transcript *TranscriptReport `json:"transcript,omitempty"`

	MetaError     string     `json:"meta_error,omitempty"`
	Schema        uint64     `json:"schema,omitempty"`
	Created       *time.Time `json:"created,omitempty"`
	Gen           uint64     `json:"gen,omitempty"`
	LastPromotion *time.Time `json:"last_promotion,omitempty"`
	CRC32C        *uint64    `json:"crc32c,omitempty"`

	PiVersion   *string         `json:"pi_version,omitempty"`
	Venue       *string         `json:"venue,omitempty"`
	ResumeChain *uint64         `json:"resume_chain,omitempty"`
	Context     *gates.Context  `json:"context,omitempty"`
	Pending     *db.Pending     `json:"pending,omitempty"`
	History     []HistoryReport `json:"history,omitempty"`
	LegacyFiles []string        `json:"legacy_files,omitempty"`
}

// TranscriptReport describes current.jsonl from its stat and its first
// line; the contents are never reported.
type TranscriptReport struct {
	Regular         bool      `json:"regular"`
	Bytes           int64     `json:"bytes"`
	ModTime         time.Time `json:"mtime"`
	HeaderOK        bool      `json:"header_ok"`
	HeaderID        string    `json:"header_id,omitempty"`
	HeaderVersion   int64     `json:"header_version,omitempty"`
	HeaderTimestamp string    `json:"header_timestamp,omitempty"`
}

// HistoryReport is one audit history entry.
type HistoryReport struct {
	Gen      uint64    `json:"gen"`
	At       time.Time `json:"at"`
	Resumed  bool      `json:"resumed"`
	Reason   string    `json:"reason"`
	Bytes    int64     `json:"bytes"`
	Chain    uint64    `json:"chain"`
	Job      string    `json:"job,omitempty"`
	TornTail bool      `json:"torn_tail,omitempty"`
}

// Inspect reports every entry under the root, in name order, to visit,
// with up to history entries of each key's audit history. It is read-only:
// it creates, changes and locks nothing for longer than one read, and
// leaves every byte and mtime as it was. A visit error stops the walk.
func (s *Store) Inspect(history int, visit func(KeyReport) error) error {
	root, err := openDir(s.root)
	if err != nil {
		return err
	}
	defer root.Close()
	names, err := readDirNames(root)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := visit(s.inspectKey(name, history)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) inspectKey(name string, history int) KeyReport {
	r := KeyReport{Name: name}
	if !ValidKey(name) {
		r.Problem = "not a key"
		return r
	}
	k, err := s.openKey(name, true)
	switch {
	case err != nil:
		r.Problem = err.Error()
		return r
	case k.missing:
		r.Problem = "vanished"
		return r
	case k.notDir:
		r.Problem = "not a real directory (a link, or not a directory)"
		return r
	}
	defer k.close()
	if k.locked {
		r.Problem = "locked: the key's lock was not had in time"
		return r
	}
	r.LegacyFiles = legacyFiles(k)
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
	}
	if k.metaErr != nil {
		r.MetaError = k.metaErr.Error()
		return r
	}
	if k.meta != nil {
		s.reportDB(k, &r, history)
		return r
	}
	r.Venue = stampValue(k.obs.Venue)
	r.PiVersion = stampValue(k.obs.PiVersion)
	if present(k, legacy.ResumeChainName) {
		c := k.obs.ResumeChain
		r.ResumeChain = &c
	}
	r.Context = k.obs.Context
	return r
}

func (s *Store) reportDB(k *keyDir, r *KeyReport, history int) {
	sc := k.sidecars
	r.PiVersion, r.Venue, r.ResumeChain, r.Pending = sc.PiVersion, sc.Venue, sc.ResumeChain, sc.Pending
	if c := sc.Context; c != nil {
		r.Context = &gates.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
	if t := sc.Transcript; t != nil {
		at := time.Unix(0, t.PromotedAt).UTC()
		sum := t.CRC32C
		r.Gen, r.LastPromotion, r.CRC32C = t.Gen, &at, &sum
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
			r.History = append(r.History, HistoryReport{
				Gen: h.Gen, At: time.Unix(0, h.At).UTC(), Resumed: h.Resumed, Reason: h.Reason,
				Bytes: h.Bytes, Chain: h.Chain, Job: h.Job, TornTail: h.TornTail,
			})
		}
		return err
	})
	if err != nil {
		r.MetaError = err.Error()
	}
}

// legacyFiles lists the legacy store's files present in a key dir.
func legacyFiles(k *keyDir) []string {
	names, err := readDirNames(k.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		switch {
		case n == legacy.PiVersionName, n == legacy.VenueName, n == legacy.ResumeChainName,
			n == legacy.ContextName, n == legacy.LockName, strings.HasSuffix(n, ".incoming"):
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func present(k *keyDir, name string) bool {
	_, err := lstatAt(k.dir, name)
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
