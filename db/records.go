package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"sessdb/internal/msgpackmap"
)

// Transcript is the identity of current.jsonl as of the promotion that
// landed it.
type Transcript struct {
	Gen        uint64 `msgpack:"g"` // the promotion's generation; PutTranscript never lets it go back
	Size       int64  `msgpack:"s"` // bytes
	CRC32C     uint64 `msgpack:"c"` // CRC-32C (Castagnoli) of the bytes, in the low 32 bits
	PromotedAt int64  `msgpack:"p"` // unix nanoseconds, host clock
}

// Context is the last context-window reading a run reported.
type Context struct {
	Tokens int64  `msgpack:"t"` // pi's context estimate at the end of the run
	Window int64  `msgpack:"w"` // the model's context window
	Model  string `msgpack:"m"` // "provider/id", normalised as a job's model is (older records: as pi wrote it); "" unstamped
}

// Pending is a promotion whose transaction committed but whose temporary
// file may not have been renamed over current.jsonl yet.
type Pending struct {
	Tmp    string `msgpack:"t"` // the temporary file's name in the key directory
	Size   int64  `msgpack:"s"` // its size, as in the Transcript committed with it
	CRC32C uint64 `msgpack:"c"` // its CRC-32C, as in the Transcript committed with it
	Gen    uint64 `msgpack:"g"` // the generation it becomes once renamed
	// Prev is the identity of the transcript this promotion replaces, nil
	// when there was none: a reader that finds the temporary file gone and
	// current.jsonl not yet the new one can judge it by Prev instead.
	// Schema 2; nil in older records.
	Prev *Transcript `msgpack:"v,omitempty"`
}

// HistoryEntry is one entry of the history/ ring: a promotion, or (schema
// 2) a promotion refused. Fields from Outcome on are schema 2; in older
// entries they are absent and read as their zero values, which are the
// defaults they document.
type HistoryEntry struct {
	// Seq is the entry's key (big-endian), not stored in the value: the
	// order of the ring. For an entry a schema 1 file holds, it is the gen.
	Seq uint64 `msgpack:"-"`
	// Gen is the generation promoted, or for a refusal the key's
	// generation when it was refused (the one that superseded the ticket).
	// Absent, as in every schema 1 entry, it is Seq.
	Gen      uint64 `msgpack:"g"`
	At       int64  `msgpack:"a"` // unix nanoseconds, host clock
	Resumed  bool   `msgpack:"r"` // the job was given a transcript at its resolve
	Reason   string `msgpack:"w"` // the resolve's reason token ("resumed", or the rung that missed)
	Bytes    int64  `msgpack:"b"` // bytes promoted; for a refusal, the bytes the job was given
	Chain    uint64 `msgpack:"c"` // the resume chain the promotion recorded; 0 for a refusal
	Job      string `msgpack:"j"` // the caller's job id; "" unknown
	TornTail bool   `msgpack:"t"` // the promoted file did not end in a newline
	// Outcome is "" for a promotion, otherwise the refusal recorded:
	// "superseded", "transcript-rewritten", "run-incomplete".
	Outcome string `msgpack:"o,omitempty"`
	// Ticket is the id of the ticket of the job that promoted or was
	// refused; "" unknown.
	Ticket string `msgpack:"k,omitempty"`
	// Run is the run's shape: "answered", "errored", "unanswered",
	// "unchanged"; "" unknown.
	Run string `msgpack:"u,omitempty"`
	// Rewritten says the promotion was let through over a rewritten
	// prefix (--allow-rewrite).
	Rewritten bool `msgpack:"x,omitempty"`
	// BaseGen is the generation the job's ticket was resolved from,
	// whatever its verdict (a cold start promotes onto what the key held);
	// 0 where the key had none, or the job had no ticket.
	BaseGen uint64 `msgpack:"bg,omitempty"`
	// CRC32C is a promotion's transcript's CRC32C (Castagnoli), so that a
	// retry of its ticket repeats only for that very transcript once the
	// key has moved on to another generation; 0 for a refusal, an entry
	// from before it was recorded, or a checksum that is 0 (a retry is
	// then told by its size alone).
	CRC32C uint64 `msgpack:"s,omitempty"`
}

// RecordedBy reports whether e was recorded by the job of ticket with
// outcome: "" its promotion, else its refusal for that reason. No entry
// is by the ticket "": entries written before tickets existed, or by a
// caller without one, carry it, and matching it would hand one job
// another's result.
func (e HistoryEntry) RecordedBy(ticket, outcome string) bool {
	return ticket != "" && e.Ticket == ticket && e.Outcome == outcome
}

// Sidecars is every sidecar at once. A nil pointer means the key is absent,
// which the gates read differently from a zero value.
type Sidecars struct {
	Transcript  *Transcript // sidecars/transcript: nil before the first promotion
	PiVersion   *string     // sidecars/pi-version: "" is an unknown version
	Venue       *string     // sidecars/venue: nil means "local" to the gates
	ResumeChain *uint64     // sidecars/resume-chain
	Context     *Context    // sidecars/context: nil is no measurement
	Pending     *Pending    // sidecars/pending: nil is no promotion in flight
}

// Meta is the content of meta/. Both fields are 0 for a schema 0 file.
type Meta struct {
	Schema  uint64 // meta/schema: the file's schema version
	Created int64  // meta/created: unix nanoseconds, host clock
}

// encodeTranscript refuses a transcript no reader takes (fault): package
// db never writes a record it would call damage.
func encodeTranscript(t Transcript) ([]byte, error) {
	if err := t.Fault(); err != nil {
		return nil, err
	}
	return encodeRecord(&t)
}
func decodeTranscript(b []byte) (t Transcript, err error) {
	if err = decodeRecord(b, &t); err != nil {
		return t, err
	}
	return t, t.Fault()
}

// fault says why p, which decoded, describes no promotion in flight, nil
// when it does: as for a transcript record (Transcript.fault), its
// generation, size and CRC32C are the new transcript's, and every writer
// records generation 1 or more, a size a file can have and a CRC32C in
// its low 32 bits. Taken as a record, one that no temp can match made a
// committed run's temp a stray: the key served the generation before,
// and the next promotion and sweep lost the run.
func (p Pending) fault() error {
	if err := (Transcript{Gen: p.Gen, Size: p.Size, CRC32C: p.CRC32C}).Fault(); err != nil {
		return fmt.Errorf("the promotion in flight: %w", err)
	}
	return nil
}

// Fault says why t, which decoded, describes no transcript a promotion
// wrote, nil when it does: every writer records generation 1 or more, a
// size a file can have and a CRC32C in its low 32 bits. Such a record is
// damage (put by hand, or by another binary), as one that does not decode
// is: a reader that took generation 0 for a key with no transcript would
// let a job resolved before the first promotion write over it, and a
// record that no file matches would make the intact file it names a
// transcript replaced, a cold start's promotion superseding it.
func (t Transcript) Fault() error {
	switch {
	case t.Gen == 0:
		return errors.New("generation 0, which no promotion records")
	case t.Size < 0:
		return fmt.Errorf("its size is %d bytes, which no file has", t.Size)
	case t.CRC32C > math.MaxUint32:
		return fmt.Errorf("its CRC32C %x, wider than 32 bits, is no file's", t.CRC32C)
	}
	return nil
}

func encodeContext(c Context) ([]byte, error) { return encodeRecord(&c) }
func decodeContext(b []byte) (c Context, err error) {
	err = decodeRecord(b, &c)
	return c, err
}

func encodePending(p Pending) ([]byte, error) {
	if err := p.fault(); err != nil {
		return nil, err
	}
	if p.Prev != nil {
		if err := p.Prev.Fault(); err != nil {
			return nil, fmt.Errorf("v: %w", err)
		}
	}
	return encodeRecord(&p)
}

// decodePending decodes a pending record, its Prev as strictly as a
// record of its own: msgpack would take an array for the nested struct.
func decodePending(b []byte) (p Pending, err error) {
	var w struct { // Pending with Prev left raw
		Tmp    string             `msgpack:"t"`
		Size   int64              `msgpack:"s"`
		CRC32C uint64             `msgpack:"c"`
		Gen    uint64             `msgpack:"g"`
		Prev   msgpack.RawMessage `msgpack:"v"`
	}
	if err = decodeRecord(b, &w); err != nil {
		return p, err
	}
	p = Pending{Tmp: w.Tmp, Size: w.Size, CRC32C: w.CRC32C, Gen: w.Gen}
	if err := p.fault(); err != nil {
		return p, err
	}
	if len(w.Prev) > 0 && w.Prev[0] != msgpcode.Nil {
		var t Transcript
		if err := decodeRecord(w.Prev, &t); err != nil {
			return p, fmt.Errorf("v: %w", err)
		}
		if err := t.Fault(); err != nil {
			return p, fmt.Errorf("v: %w", err)
		}
		p.Prev = &t
	}
	return p, nil
}

func encodeHistory(h HistoryEntry) ([]byte, error) { return encodeRecord(&h) }

// decodeHistory decodes an entry's value and takes Seq from its key, and
// Gen too when the value has none (a schema 1 entry).
func decodeHistory(key, value []byte) (HistoryEntry, error) {
	var h HistoryEntry
	if len(key) != 8 {
		return h, fmt.Errorf("key is %d bytes, want 8", len(key))
	}
	h.Seq = binary.BigEndian.Uint64(key)
	h.Gen = h.Seq // msgpack leaves a field the value does not hold as it is
	if err := decodeRecord(value, &h); err != nil {
		return HistoryEntry{}, err
	}
	return h, nil
}

func historyKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func encodeRecord(v any) ([]byte, error) { return marshal(v) }

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	// Compact ints keep small numbers at a byte or two; the decoders accept
	// every width, so this is not part of the format.
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeRecord decodes a map-encoded record into v: exactly one map,
// as msgpackmap.Decode says.
func decodeRecord(b []byte, v any) error { return msgpackmap.Decode(b, v) }

// newDecoder takes a decoder from msgpack's pool: a reader decodes a dozen
// records per key, and a new decoder each time was a tenth of a dump's CPU.
func newDecoder(r *bytes.Reader) *msgpack.Decoder {
	dec := msgpack.GetDecoder()
	dec.Reset(r)
	return dec
}

// noTrailing refuses bytes after the value: Decode stops at the end of one
// value and ignores the rest, and a record with a tail is not one this
// package wrote.
func noTrailing(r *bytes.Reader) error {
	if n := r.Len(); n != 0 {
		return fmt.Errorf("msgpack: %d trailing bytes", n)
	}
	return nil
}

func encodeString(s string) ([]byte, error) { return marshal(s) }

// decodeString refuses nil and bin, which msgpack would turn into "" or a
// string silently: "" means "unknown pi version" and must not come from a
// damaged value.
func decodeString(b []byte) (string, error) {
	r := bytes.NewReader(b)
	dec := newDecoder(r)
	defer msgpack.PutDecoder(dec)
	c, err := dec.PeekCode()
	if err != nil {
		return "", err
	}
	if !msgpcode.IsString(c) {
		return "", fmt.Errorf("msgpack: code %#x is not a string", c)
	}
	if err := msgpackmap.WellFormed(b); err != nil {
		return "", err // a length no bytes back, which DecodeString would allocate first
	}
	s, err := dec.DecodeString()
	if err != nil {
		return "", err
	}
	return s, noTrailing(r)
}

func encodeUint(n uint64) []byte {
	b, _ := marshal(n) // an integer always encodes
	return b
}

func encodeInt(n int64) []byte {
	b, _ := marshal(n) // as encodeUint
	return b
}

// decodeInteger reads one msgpack integer of any width, refusing nil (which
// msgpack reads as 0) and anything that is not an integer.
func decodeInteger(b []byte) (u uint64, negative bool, err error) {
	r := bytes.NewReader(b)
	dec := newDecoder(r)
	defer msgpack.PutDecoder(dec)
	c, err := dec.PeekCode()
	if err != nil {
		return 0, false, err
	}
	// Unsigned codes decode unsigned and signed codes signed: msgpack's
	// DecodeInt64 turns a uint64 above MaxInt64 into a negative number
	// without an error, and DecodeUint64 a negative one into a huge one.
	// The range is then judged once, by decodeUint or decodeInt.
	switch {
	case c <= msgpcode.PosFixedNumHigh, c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		u, err = dec.DecodeUint64()
	case c >= msgpcode.NegFixedNumLow, c >= msgpcode.Int8 && c <= msgpcode.Int64:
		var n int64
		n, err = dec.DecodeInt64()
		u, negative = uint64(n), n < 0
	default:
		return 0, false, fmt.Errorf("%w (code %#x)", errNotInt, c)
	}
	if err != nil {
		return 0, false, err
	}
	return u, negative, noTrailing(r)
}

func decodeUint(b []byte) (uint64, error) {
	u, neg, err := decodeInteger(b)
	if err == nil && neg {
		err = fmt.Errorf("msgpack: %d is negative", int64(u))
	}
	return u, err
}

func decodeInt(b []byte) (int64, error) {
	u, neg, err := decodeInteger(b)
	if err == nil && !neg && u > math.MaxInt64 {
		err = fmt.Errorf("msgpack: %d overflows int64", u)
	}
	return int64(u), err
}
