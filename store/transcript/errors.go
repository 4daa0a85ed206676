package transcript

import (
	"errors"
	"fmt"
)

// These errors can be returned when reading a first line: by ReadHeader on
// their own (ErrNotJSON beside the parser's error), and by Scanner, Load
// and ReadEnd as the Err of an *InvalidError.
var (
	// ErrEmpty is returned when the reader holds no bytes (ReadHeader), or
	// no line that is not blank (Scanner).
	ErrEmpty = errors.New("empty transcript")
	// ErrHeaderTooLong is returned by ReadHeader when the first line is
	// longer than MaxHeaderBytes. Scanner reads the header like any other
	// line, up to MaxLineBytes, since pi bounds neither.
	ErrHeaderTooLong = errors.New("first line longer than MaxHeaderBytes")
	// ErrNotJSON is returned when the first line is not a JSON text; the
	// parser's error is wrapped beside it. Scanner returns it when no line
	// of the file parses.
	ErrNotJSON = errors.New("first line is not JSON")
)

// These errors can be returned when scanning the entries after the header
// (Scanner, Load, ReadEnd).
var (
	// ErrNoHeader is returned, as the Err of an *InvalidError, when the
	// first line JSON.parse accepts is not an object with type "session".
	ErrNoHeader = errors.New("first entry is not a session header")
	// ErrHeaderID is returned, as the Err of an *InvalidError, when the
	// header's id is not a string.
	ErrHeaderID = errors.New("session header id is not a string")
	// ErrLineTooLong is returned, wrapped with the line number, when a line
	// is longer than MaxLineBytes. The scan stops there. The message gives
	// the limit as a size, for the CLI's user, who compares it with the file.
	ErrLineTooLong = errors.New("line longer than 64 MiB, more than sessdb reads (pi has no such limit)")
	// ErrCycle is returned by Load and ReadEnd, wrapped with the entry id,
	// when following parentId from the leaf comes back to an entry already
	// walked. pi would loop forever on such a file.
	ErrCycle = errors.New("parentId cycle")
)

// InvalidError reports a file that pi would not load as a transcript: pi
// takes its empty-file branch for such a file and overwrites it with a fresh
// header. Err is ErrEmpty, ErrNotJSON, ErrNoHeader or ErrHeaderID.
type InvalidError struct {
	Err  error  // the reason: ErrEmpty, ErrNotJSON, ErrNoHeader or ErrHeaderID
	Line int64  // the line that decided it (0 for ErrEmpty)
	Type string // for ErrNoHeader: the type of the entry found instead, if any
	// Unparsed is the first non-blank line when JSON.parse rejected it: the
	// header line that does not parse.
	Unparsed int64
}

// Error says why pi would not load the file, naming the line that decided
// it and, when the header line did not parse, that line too.
func (e *InvalidError) Error() string {
	msg := "not a pi transcript: "
	switch {
	case e.Err == ErrEmpty:
		return msg + "empty (no line that is not blank)"
	case e.Err == ErrNotJSON:
		return fmt.Sprintf("%sline %d: session header is not JSON, and no later line is", msg, e.Line)
	case e.Err == ErrNoHeader && e.Type != "":
		msg += fmt.Sprintf("line %d: first entry is a %q entry, not a session header", e.Line, e.Type)
	default:
		msg += fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	if e.Unparsed > 0 {
		msg += fmt.Sprintf(" (line %d, the header line, is not JSON)", e.Unparsed)
	}
	return msg
}

// Unwrap returns Err, so that errors.Is(err, ErrNoHeader) and its kin hold.
func (e *InvalidError) Unwrap() error { return e.Err }
