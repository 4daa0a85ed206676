package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"sessdb/internal/jsstr"
)

// MaxLineBytes bounds one line of a transcript. pi writes an entry per line
// with no limit of its own; the largest lines are tool outputs (pi's read and
// bash tools truncate theirs) and pasted images (base64, a few MB). 64 MiB
// keeps room for any of them while bounding what one damaged file can make
// the scanner hold.
const MaxLineBytes = 64 << 20 // ErrLineTooLong's message says 64 MiB

// Stats counts what a scan read and what it left out.
type Stats struct {
	Lines      int64 // physical lines, a last line without '\n' included
	Blank      int64 // lines that are empty or whitespace, skipped as pi skips them
	Malformed  int64 // lines JSON.parse rejects, dropped as pi drops them
	NotEntries int64 // valid JSON that is not an entry: a session line after the header (pi skips it), null (pi throws), or in a version 1 file a string, number or boolean (pi's migration throws)
	Entries    int64 // entries returned by Next, the header not included
	Bytes      int64 // bytes read from the input so far, as lines
}

// Dropped is the number of non-blank lines that did not become the header or
// an entry.
func (s Stats) Dropped() int64 { return s.Malformed + s.NotEntries }

// Scanner reads a transcript entry by entry, as pi loads it: entries come
// out migrated to version 3 (ids and parents for version 1, "hookMessage"
// renamed for version 2). It is not safe for concurrent use. The first call
// to Next or Header reads up to the header; a file that is not a transcript
// stops there with an *InvalidError from Err.
type Scanner struct {
	r       *bufio.Reader
	maxLine int
	long    []byte // a line longer than r's buffer, assembled
	names   names
	args    stringifier // scratch for measuring tool-call arguments

	stats    Stats
	line     int64 // physical line of the value last returned by nextValue
	offset   int64 // byte offset of that line
	index    int   // pi's index of the next parsed line
	started  bool  // a non-blank line has been seen
	firstBad int64 // the first line JSON.parse rejected, while no value has parsed
	pending  []byte
	pendLine int64
	pendOff  int64
	havePend bool
	eof      bool

	header  Header
	hdrOK   bool
	version int64
	state   int // 0 before the header, 1 scanning, 2 done
	err     error
	entry   Entry
	prevID  string
	noID    map[int]bool // version 1: indexes pi's migration gives no id

	// throwsAt is the physical line of the first line pi's load throws
	// on, dropped by the scan (0: none): pi loads nothing of the file, nor
	// of any part of it that holds that line.
	throwsAt int64
}

// NewScanner returns a Scanner reading from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{r: bufio.NewReaderSize(r, 64<<10), maxLine: MaxLineBytes}
}

// Header reads up to the header if Next has not yet, and returns it.
func (s *Scanner) Header() (Header, error) {
	if s.state == 0 {
		s.readHeader()
	}
	if !s.hdrOK {
		return Header{}, s.err
	}
	return s.header, nil
}

// Version is the format version pi reads the file as, which decides the
// migrations: 1 when the header's version is absent, null or below 2; 2 from
// 2 to below 3; the header's number from 3 on (a future 4 is read as is).
// A version that is not a number is compared as pi's JavaScript compares
// it, by ToNumber: "1", " 1 ", "0b1", true, false, "", [] and [null] read
// below 2 (the file is migrated from version 1), "2" and [2] as 2, and a
// value that reads as NaN ("abc", {}, [1,2], [true]) as 3, without
// migration.
func (s *Scanner) Version() int64 { return s.version }

// Err returns the error that ended the scan, nil at the end of a valid file.
func (s *Scanner) Err() error { return s.err }

// Stats returns the counts so far.
func (s *Scanner) Stats() Stats { return s.stats }

// Entry returns the entry Next found. It is overwritten by the next call.
func (s *Scanner) Entry() *Entry { return &s.entry }

// Next advances to the next entry and reports whether there is one.
func (s *Scanner) Next() bool {
	if s.state == 0 {
		s.readHeader()
	}
	for s.state == 1 {
		line, err := s.nextValue()
		if err != nil {
			s.state = 2
			if err != io.EOF {
				s.err = err
			}
			return false
		}
		index := s.index
		s.index++
		c := (&walker{b: line}).peek()
		if c == 'n' || s.version < 2 && c != '{' && c != '[' {
			// pi cannot load these: its index reads null.type, and its v1
			// migration assigns an id to a string, a number or a boolean.
			// Both throw a TypeError; the line is dropped here.
			s.stats.NotEntries++
			if s.throwsAt == 0 {
				s.throwsAt = s.line
			}
			s.noteNoID(index)
			continue
		}
		e := &s.entry
		*e = Entry{Line: s.line, Offset: s.offset, Index: index, firstKeptIndex: -1}
		if c == '{' {
			decode(line, e, s.prevID, &s.names, &s.args)
		}
		if e.Type == "session" {
			// pi's index and getEntries skip every session line, in a file
			// of any version, and its v1 migration gives them no id.
			s.stats.NotEntries++
			s.noteNoID(index)
			continue
		}
		s.migrate(e)
		s.prevID = e.ID
		s.stats.Entries++
		return true
	}
	return false
}

func (s *Scanner) noteNoID(index int) {
	if s.version < 2 {
		if s.noID == nil {
			s.noID = make(map[int]bool)
		}
		s.noID[index] = true
	}
}

// migrate applies pi's v1->v2->v3 migration to e: pi gives every version 1
// object and array an id and the previous one as parent. From version 2 on
// an entry keeps the id it has, whatever it is: one with no id (an object
// without one, a line that is not an object) is in pi's entries too, never
// reached by a parentId but the leaf when it comes last.
func (s *Scanner) migrate(e *Entry) {
	if s.version < 2 {
		e.ID, e.idKind = v1ID(e.Index), idString
		e.ParentID, e.parentKind = s.prevID, idNone
		if s.prevID != "" {
			e.parentKind = idString
		}
		e.FirstKeptEntryID, e.HasFirstKept, e.firstKeptKind = "", false, idNone
		if e.Type == "compaction" && e.firstKeptIndex > 0 && e.firstKeptIndex < e.Index && !s.noID[e.firstKeptIndex] {
			e.FirstKeptEntryID, e.HasFirstKept, e.firstKeptKind = v1ID(e.firstKeptIndex), true, idString
		}
	}
	if s.version < 3 && e.Type == "message" && e.Message.Role == "hookMessage" {
		e.Message.Role = "custom"
	}
}

func (s *Scanner) readHeader() {
	s.state = 1
	line, err := s.nextValue()
	if err != nil {
		s.state = 2
		switch {
		case err != io.EOF:
			s.err = err
		case s.firstBad > 0:
			s.err = &InvalidError{Err: ErrNotJSON, Line: s.firstBad}
		default:
			s.err = &InvalidError{Err: ErrEmpty}
		}
		return
	}
	s.index = 1
	h, v, kind := headerFields(line)
	switch {
	case !h.IsSession():
		s.state, s.err = 2, &InvalidError{Err: ErrNoHeader, Line: s.line, Type: h.Type, Unparsed: s.firstBad}
	case !h.IDIsString:
		s.state, s.err = 2, &InvalidError{Err: ErrHeaderID, Line: s.line, Unparsed: s.firstBad}
	default:
		// pi: version = header.version ?? 1; then "version >= 3" loads the
		// file as is, "version < 2" migrates from v1 and "version < 3" from
		// v2, each comparison coercing the value by ToNumber (v). NaN
		// compares false with everything: no migration, read as 3. A
		// number in between migrates as its floor would.
		s.header, s.hdrOK, s.version = h, true, 3
		if kind == 't' {
			// pi's comparison of the version throws a TypeError: it loads
			// nothing of the file, nor of any part of it (the header is in
			// every part). The version reads as NaN, as below.
			s.throwsAt = s.line
		}
		switch {
		case kind == 'a' || v < 2:
			s.version = 1
		case v < 3:
			s.version = 2
		case v > 3 && v < 1<<62:
			s.version = int64(v)
		}
	}
}

// nextValue returns the next line JSON.parse accepts, after pi's handling
// of the file: pi trims the whole content (so the first line loses leading
// whitespace, a BOM included, and the last line loses trailing whitespace),
// splits on '\n', skips lines that trim to nothing and drops lines JSON.parse
// rejects. The returned slice is valid until the next call.
func (s *Scanner) nextValue() ([]byte, error) {
	for !s.eof {
		line, err := s.readLine()
		if err == io.EOF {
			s.eof = true
			break
		}
		if err != nil {
			return nil, err
		}
		if blank(line) {
			s.stats.Blank++
			continue
		}
		if !s.started {
			s.started = true
			line = bytes.TrimLeftFunc(line, jsstr.IsSpace)
		}
		if s.havePend {
			// A line follows, so the whole-file trim never reached the
			// pending line's trailing whitespace.
			s.havePend = false
			s.rejected(s.pendLine)
		}
		if valid(line) {
			return line, nil
		}
		if t := bytes.TrimRightFunc(line, jsstr.IsSpace); len(t) < len(line) && valid(t) {
			s.pending, s.pendLine, s.pendOff, s.havePend = append(s.pending[:0], t...), s.line, s.offset, true
			continue
		}
		s.rejected(s.line)
	}
	if s.havePend {
		s.havePend = false
		s.line, s.offset = s.pendLine, s.pendOff
		return s.pending, nil
	}
	return nil, io.EOF
}

func (s *Scanner) rejected(line int64) {
	s.stats.Malformed++
	if s.firstBad == 0 && s.state == 1 && s.index == 0 {
		s.firstBad = line
	}
}

// readLine returns the next physical line without its '\n'.
func (s *Scanner) readLine() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull && len(s.long) <= s.maxLine {
			b, err = s.r.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	if err == io.EOF && len(b) == 0 {
		return nil, io.EOF
	}
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("line %d: %w", s.stats.Lines+1, err)
	}
	s.stats.Lines++
	s.line, s.offset = s.stats.Lines, s.stats.Bytes
	s.stats.Bytes += int64(len(b))
	b = bytes.TrimSuffix(b, []byte{'\n'})
	if len(b) > s.maxLine {
		return nil, fmt.Errorf("line %d: %w", s.line, ErrLineTooLong)
	}
	return b, nil
}

// blank reports whether line trims to nothing by JavaScript's trim.
func blank(line []byte) bool {
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRune(line[i:])
		if !jsstr.IsSpace(r) {
			return false
		}
		i += n
	}
	return true
}
