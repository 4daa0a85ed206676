package migrate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/legacy"
)

// Values are a key's sidecars as meta.db holds them (ToDB: what it will
// hold; ToLegacy: what the legacy files will say). A null pointer is an
// absent sidecar: an absent venue means "local", an absent chain 0, an
// absent context no measurement.
//
// Values marshal as docs/json.md's migrate values object (json.go): the
// transcript's identity is "record", and an unknown pi version is null.
type Values struct {
	// Transcript is current.jsonl's record; nil when it is not a regular
	// file (a link, a FIFO, absent), which meta.db then does not record.
	Transcript *Transcript `json:"record"`
	// PiVersion is the pi-version stamp; "" is unknown, which the version
	// gate refuses, as the legacy reader refused an unreadable stamp.
	PiVersion string `json:"pi_version"`
	// Venue is the venue stamp; nil is absent, which means "local" (a
	// transcript from before venues were stamped). "(pending)" matches no
	// venue.
	Venue *string `json:"venue"`
	// ResumeChain is the count of consecutive host deliveries; nil is
	// absent, which the chain gate reads as 0.
	ResumeChain *uint64 `json:"resume_chain"`
	// Context is the last context reading; nil is no measurement.
	Context *db.Context `json:"context"`
}

// Transcript is the identity of current.jsonl and the last promotion time
// (the legacy clock: the transcript's mtime): the record meta.db holds.
type Transcript struct {
	// Gen is the promotion generation. ToDB records 1: the legacy layout
	// counted none, and a generation only has to grow from here.
	Gen uint64 `json:"gen"`
	// Size is current.jsonl's length in bytes.
	Size int64 `json:"bytes"`
	// CRC32C is the Castagnoli checksum of those bytes, which Resolve
	// checks its copy against.
	CRC32C store.Checksum `json:"crc32c"`
	// PromotedAt is the last promotion time, from which expired counts.
	// ToDB takes the transcript's mtime, the legacy store's clock.
	PromotedAt time.Time `json:"promoted_at"`
}

// Oddity is a value that is not plain, and how it is read: it keeps its
// meaning to the ladder, not always its bytes, so the operator is shown
// both.
type Oddity struct {
	// File is the entry's name in the key dir.
	File string `json:"file"`
	// Found is what was there: a quoted value (at most 64 bytes of it),
	// or the kind of entry ("symbolic link", "FIFO", "absent").
	Found string `json:"found"`
	// ReadAs is its meaning to the ladder, and so in meta.db (or in the
	// legacy files), or what becomes of the entry.
	ReadAs string `json:"read_as"`
}

// sidecars turns v into the records ToDB commits.
func (v Values) sidecars() db.Sidecars {
	sc := db.Sidecars{PiVersion: &v.PiVersion, Venue: v.Venue, ResumeChain: v.ResumeChain}
	if t := v.Transcript; t != nil {
		sc.Transcript = &db.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: uint64(t.CRC32C), PromotedAt: db.RecordedAt(t.PromotedAt)}
	}
	if c := v.Context; c != nil {
		sc.Context = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model} // a copy: the plan keeps its own
	}
	return sc
}

// valuesOf is the inverse of sidecars, for ToLegacy's report. A nil
// pi-version reads as "" (unknown), which is how it is written back.
func valuesOf(sc db.Sidecars) Values {
	v := Values{Venue: sc.Venue, ResumeChain: sc.ResumeChain}
	if sc.PiVersion != nil {
		v.PiVersion = *sc.PiVersion
	}
	if t := sc.Transcript; t != nil {
		v.Transcript = &Transcript{Gen: t.Gen, Size: t.Size, CRC32C: store.Checksum(t.CRC32C), PromotedAt: time.Unix(0, t.PromotedAt).UTC()}
	}
	if c := sc.Context; c != nil {
		v.Context = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
	return v
}

// readLegacy reads the four legacy sidecars of a scanned key dir with
// store/legacy's rules, which are the values; the raw bytes seen by scan
// serve only to describe oddities. A sidecar not read for want of a
// descriptor or memory, or whose read failed on the file (an I/O error:
// Observed.NotRead, the first named), is an error: migrated as no value,
// the key would keep a stamp (or a chain) it does not have, and its file
// be removed.
func readLegacy(k *keyScan) (Values, []Oddity, error) {
	var v Values
	var odd []Oddity
	note := func(file, found, readAs string) { odd = append(odd, Oddity{file, found, readAs}) }
	o, err := legacy.Observe(k.dir)
	if err == nil && len(o.NotRead) > 0 {
		err = o.NotRead[0]
	}
	if err != nil {
		return Values{}, nil, err
	}

	switch st := o.Venue; st.State {
	case gates.StampAbsent:
		note(legacy.VenueName, "absent", `"local": a transcript from before venue stamps ran on local (stays absent)`)
	case gates.StampUnreadable:
		// The legacy reader refused it, so it vouched for no venue; an
		// absent stamp would mean "local" and could resume the key.
		p := legacy.PendingVenue
		v.Venue = &p
		note(legacy.VenueName, k.describe(legacy.VenueName), `no value: stamped "(pending)", which matches no venue (the key stays cold)`)
	default:
		val := st.Value
		v.Venue = &val
		switch {
		case val == legacy.PendingVenue:
			note(legacy.VenueName, quote(k.raw[legacy.VenueName]), "an interrupted legacy promotion: carried as is, it matches no venue")
		case val == "":
			note(legacy.VenueName, k.describe(legacy.VenueName), `"" after trimming: matches no venue`)
		case strings.IndexByte(val, 0) >= 0:
			note(legacy.VenueName, k.describe(legacy.VenueName), k.nulReadAs(legacy.VenueName, val))
		default:
			k.noteReshaped(&odd, legacy.VenueName, val)
		}
	}

	switch st := o.PiVersion; st.State {
	case gates.StampPresent:
		v.PiVersion = st.Value
		if st.Value == "" {
			note(legacy.PiVersionName, k.describe(legacy.PiVersionName), `unknown (""): the version gate refuses`)
		} else if strings.IndexByte(st.Value, 0) >= 0 {
			note(legacy.PiVersionName, k.describe(legacy.PiVersionName), k.nulReadAs(legacy.PiVersionName, st.Value))
		} else {
			k.noteReshaped(&odd, legacy.PiVersionName, st.Value)
		}
	default:
		note(legacy.PiVersionName, k.describe(legacy.PiVersionName), `unknown (""): the version gate refuses`)
	}

	if k.present(legacy.ResumeChainName) {
		n := o.ResumeChain
		v.ResumeChain = &n
		raw, ok := legacy.ReadSidecar(k.dir, legacy.ResumeChainName)
		switch {
		case !ok:
			note(legacy.ResumeChainName, k.describe(legacy.ResumeChainName), "no value: chain 0")
		case n == 0 && raw != "0":
			note(legacy.ResumeChainName, k.describe(legacy.ResumeChainName), "chain 0 (not a canonical positive integer)")
		case strconv.FormatUint(n, 10) != raw:
			note(legacy.ResumeChainName, k.describe(legacy.ResumeChainName), fmt.Sprintf("chain %d (saturated)", n))
		default:
			k.noteReshaped(&odd, legacy.ResumeChainName, raw)
		}
	}

	if k.present(legacy.ContextName) {
		c := o.Context
		if c == nil {
			note(legacy.ContextName, k.describe(legacy.ContextName), "no measurement (not \"tokens window [model]\"): dropped")
		} else {
			v.Context = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
			if line := formatContext(*v.Context); line != string(k.raw[legacy.ContextName]) {
				note(legacy.ContextName, k.describe(legacy.ContextName), quote([]byte(line)))
			}
			if c.Model != strings.ToLower(c.Model) {
				note(legacy.ContextName, "model stamp "+quote([]byte(c.Model)), "compared as written, not lowercased (as the legacy reader did)")
			}
			if strings.IndexByte(c.Model, 0) >= 0 {
				// As a venue's or pi-version's NUL byte: no job's model
				// given on a command line can hold one, so the reading
				// is another model's to every CLI job that names one.
				note(legacy.ContextName, "model stamp "+quote([]byte(c.Model)), "carried as is: it holds a NUL byte, which no --model can, so it matches no CLI job's model (the context bound skips the reading for a job that names one; one that names none still uses it)")
			}
		}
	}
	return v, odd, nil
}

// nulReadAs is how a stamp holding a NUL byte is read: the value carried
// (the legacy reader's trim keeps the byte; whitespace trimmed or invalid
// UTF-8 decoded says so, as noteReshaped does), and that the stamp
// matches no job's value given on a command line or in the environment,
// neither of which can hold one (only the Go API's Job can).
func (k *keyScan) nulReadAs(name, value string) string {
	return quote([]byte(value)) + k.reshaped(name, value) + ": it holds a NUL byte, which no --venue or --pi-version (nor variable) can, so it matches no CLI job's (the key stays cold for them)"
}

// reshaped is how value, read from name's bytes, differs from them: ""
// where it does not, else the note noteReshaped gives.
func (k *keyScan) reshaped(name, value string) string {
	raw := k.raw[name]
	switch {
	case !utf8.Valid(raw):
		return " (invalid UTF-8 decoded as U+FFFD, as Node did)"
	case string(raw) != value:
		return " (trimmed)"
	}
	return ""
}

// noteReshaped notes a value that reads differently from its bytes:
// whitespace trimmed, or invalid UTF-8 replaced.
func (k *keyScan) noteReshaped(odd *[]Oddity, name, value string) {
	if how := k.reshaped(name, value); how != "" {
		*odd = append(*odd, Oddity{name, quote(k.raw[name]), quote([]byte(value)) + how})
	}
}

// formatContext is the legacy writer's context line for c; a context
// file that reads as c but is spelled otherwise is reported as an oddity.
func formatContext(c db.Context) string {
	return formatContextParts(strconv.FormatInt(c.Tokens, 10), strconv.FormatInt(c.Window, 10), c.Model)
}

// quote shows a value in a report: Go-quoted, at most 64 bytes of it.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}
