package etcdmeta

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"sessdb/internal/msgpackmap"
)

// SchemaVersion is the record schema this package writes. A record of a
// newer schema is refused (ErrNewerSchema), never rewritten.
const SchemaVersion = 1

// HistoryLimit is how many history entries a key keeps: every write trims
// the oldest beyond it, and Get returns at most this many.
const HistoryLimit = 64

// Rev is an etcd revision. A record's Rev is its mod revision, which
// changes with every write of the record and never repeats: it is the base
// a job's ticket carries. 0 means no record.
type Rev int64

// Record is everything a key's record holds: the identity of its
// transcript and the sidecars. A nil pointer means the sidecar is absent,
// which the gates read differently from a zero value. The zero Record is a
// key with no sidecars at all.
type Record struct {
	Transcript  *Transcript `msgpack:"t,omitempty"`  // nil: no transcript promoted yet
	PiVersion   *string     `msgpack:"pv,omitempty"` // "" = unknown
	Venue       *string     `msgpack:"vn,omitempty"` // absent = "local"
	ResumeChain *uint64     `msgpack:"rc,omitempty"` // consecutive host deliveries
	Context     *Context    `msgpack:"cx,omitempty"` // absent = no measurement
	// HistoryGen is the highest generation the key's history names, where
	// that is above Transcript's (0 otherwise). Only Create, moving a key
	// in with its history, writes one: a promotion names the generation
	// above its base's. A writer that takes the record for the key's state
	// without reading its history must not do so where it is set, or it
	// would number its generation below one the history holds.
	HistoryGen uint64 `msgpack:"hg,omitempty"`
}

// Transcript identifies the transcript generation the record names: the
// write-once file File on shared storage, with its size and CRC32C as
// written.
type Transcript struct {
	Gen        uint64 `msgpack:"g"` // the generation the promotion made
	Size       int64  `msgpack:"s"` // bytes
	CRC32C     uint64 `msgpack:"c"` // Castagnoli, in the low 32 bits
	PromotedAt int64  `msgpack:"p"` // unix nanoseconds, host clock
	// File is the transcript's name under the transcripts dir, as
	// fleet/shared returned it ("<key>/<gen>-<random>.jsonl"). It is
	// foreign input to a reader: validate it before it touches a path.
	File string `msgpack:"f"`
}

// Context is the last context-window reading a run reported.
type Context struct {
	Tokens int64  `msgpack:"t"` // tokens in use at the end of the run
	Window int64  `msgpack:"w"` // the model's context window
	Model  string `msgpack:"m"` // the model that measured it, "provider/id", normalised as a job's model is
}

// HistoryEntry is one line of a key's audit history: a promotion, or a
// refusal recorded by AppendHistory. Seq is the entry's place in the
// key's history, taken from its etcd key; it is assigned by the write and
// ignored when passed in.
type HistoryEntry struct {
	Seq      uint64 `msgpack:"-"` // from the entry's etcd key, not its value
	Gen      uint64 `msgpack:"g"` // the generation promoted, or for a refusal the one the key held
	At       int64  `msgpack:"a"` // unix nanoseconds, host clock
	Resumed  bool   `msgpack:"r"` // the job was resolved warm
	Reason   string `msgpack:"w"` // the job's resolve reason
	Bytes    int64  `msgpack:"b"` // the transcript's size
	Chain    uint64 `msgpack:"c"` // the resume chain after it
	Job      string `msgpack:"j"` // the job id resolve was given
	TornTail bool   `msgpack:"t"` // a newline was added to a torn last line
	// The job contract's fields: the ticket that promoted or was refused,
	// the refusal ("" for a promotion), the run's shape, whether an
	// allowed rewrite was promoted, and the generation the ticket was
	// resolved from.
	Ticket    string `msgpack:"k,omitempty"`  // the ticket id
	Outcome   string `msgpack:"o,omitempty"`  // "" for a promotion, else the refusal
	Run       string `msgpack:"n,omitempty"`  // the run's shape
	Rewritten bool   `msgpack:"x,omitempty"`  // an allowed rewrite was promoted
	BaseGen   uint64 `msgpack:"bg,omitempty"` // the generation the ticket was resolved from
	CRC32C    uint64 `msgpack:"s,omitempty"`  // a promotion's transcript's CRC32C; 0: not recorded
}

// wireRecord is a Record as stored: the same fields and the schema version.
type wireRecord struct {
	V           uint64      `msgpack:"v"`
	Transcript  *Transcript `msgpack:"t,omitempty"`
	PiVersion   *string     `msgpack:"pv,omitempty"`
	Venue       *string     `msgpack:"vn,omitempty"`
	ResumeChain *uint64     `msgpack:"rc,omitempty"`
	Context     *Context    `msgpack:"cx,omitempty"`
	HistoryGen  uint64      `msgpack:"hg,omitempty"`
	// HistorySeq is the key's newest history slot when the record was
	// written, a hint that spares a writer in a new process the read of
	// the history's last slot. It is a guess, never trusted: refusals
	// append entries without rewriting the record, and a binary that
	// predates the field drops it. A write claims its slot by compare.
	HistorySeq uint64 `msgpack:"hs,omitempty"`
}

// encodeRecord encodes r, with seq, the newest history slot once the
// record's transaction commits, as its hint.
func encodeRecord(r Record, seq uint64) ([]byte, error) {
	return marshal(wireRecord{V: SchemaVersion, Transcript: r.Transcript, PiVersion: r.PiVersion,
		Venue: r.Venue, ResumeChain: r.ResumeChain, Context: r.Context, HistoryGen: r.HistoryGen, HistorySeq: seq})
}

func decodeRecord(b []byte) (Record, error) {
	r, _, err := decodeRecordHint(b)
	return r, err
}

// decodeRecordHint is decodeRecord, with the record's hint of the newest
// history slot (0: none).
func decodeRecordHint(b []byte) (Record, uint64, error) {
	var w wireRecord
	if err := msgpackmap.Decode(b, &w); err != nil {
		return Record{}, 0, fmt.Errorf("%w: record: %w", ErrDamaged, err)
	}
	switch {
	case w.V == 0:
		return Record{}, 0, fmt.Errorf("%w: record has no schema version", ErrDamaged)
	case w.V > SchemaVersion:
		return Record{}, 0, fmt.Errorf("%w: record schema %d, this binary knows %d", ErrNewerSchema, w.V, SchemaVersion)
	}
	return Record{Transcript: w.Transcript, PiVersion: w.PiVersion, Venue: w.Venue,
		ResumeChain: w.ResumeChain, Context: w.Context, HistoryGen: w.HistoryGen}, w.HistorySeq, nil
}

func encodeHistory(e HistoryEntry) ([]byte, error) { return marshal(e) }

func decodeHistory(seq uint64, b []byte) (HistoryEntry, error) {
	var e HistoryEntry
	if err := msgpackmap.Decode(b, &e); err != nil {
		return e, fmt.Errorf("%w: history entry %d: %w", ErrDamaged, seq, err)
	}
	e.Seq = seq
	return e, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true) // small numbers in a byte or two; any width decodes
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// seqName is a history entry's name: 16 hex digits, so that etcd's byte
// order is numeric order.
func seqName(seq uint64) string { return fmt.Sprintf("%016x", seq) }

// aboveLastSlot is the name of seq 2^64-1, which parseSeq takes for no
// slot's.
const aboveLastSlot = "ffffffffffffffff"

// parseSeq parses a history entry's name. The last slot (all f) is not
// one: no write can claim the slot above it, so an entry there (another
// binary's, or one written by hand) is damage to report, not a slot whose
// successor wraps to 0 and loses every compare, which a writer took for
// etcd being unavailable.
func parseSeq(name string) (uint64, bool) {
	if len(name) != 16 || !lowerHex(name) {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 16, 64)
	return n, err == nil && n != math.MaxUint64
}

// quoteName quotes a history entry's name for an error: whole when it is
// short, else its first 64 bytes (cut at a rune's start) and its length.
// A name that is no slot's was written by another binary or by hand, and
// etcd takes a key of up to its request limit (1.5 MiB by default): quoted
// whole, it made every Get's error about the key as long.
func quoteName(name string) string {
	const max = 64
	if len(name) <= max {
		return strconv.Quote(name)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(name[:cut]), len(name))
}

// ValidKey reports whether key is 32 lowercase hex characters, the only
// keys this package reads or writes.
func ValidKey(key string) bool {
	return len(key) == 32 && lowerHex(key)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
