package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonLine is v as one line of JSON in which every character is printable.
// encoding/json escapes the C0 controls but writes DEL, the C1 controls
// (U+009B is a one-character CSI to many terminals) and the Unicode format
// characters (bidi overrides) raw; names under a sessions root and ids in
// a transcript are anyone's choice, and a JSON line is often read on a
// terminal. Every character printable refuses is escaped as \uXXXX, which
// any JSON reader decodes back to the same string. (Outside strings JSON
// is ASCII, so only strings are touched.) So is U+FFFD, the stand-in for
// a byte that is not UTF-8 (a name's, docs/json.md): encoding/json writes
// it \ufffd up to Go 1.26 and raw from Go 1.27, and a name must read the
// same whichever Go built the binary.
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(escapeJSON(b), '\n'), nil
}

// escapeJSON is b, JSON text, with every character printable refuses, and
// U+FFFD, written as \uXXXX; b itself when there is none.
func escapeJSON(b []byte) []byte {
	escaped := func(r rune) bool { return r >= 0x7f && (unprintable(r) || r == utf8.RuneError) }
	if !bytes.ContainsFunc(b, escaped) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, r := range string(b) {
		switch {
		case !escaped(r):
			out = utf8.AppendRune(out, r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

// escapingWriter is stderr with --log-format json: zerolog escapes the C0
// controls, as encoding/json does, but writes the C1 controls and the bidi
// overrides raw, and a line on stderr carries what an operator gave (a
// path) and what a sessions root holds (a name) as stdout's does. Each
// Write is one whole line (zerolog writes an event at once), escaped as
// jsonLine escapes stdout's.
type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	if _, err := e.w.Write(escapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// jsonWriter writes JSON lines to w and remembers the first error.
type jsonWriter struct {
	w   io.Writer
	err error
}

func (j *jsonWriter) encode(v any) error {
	if j.err != nil {
		return j.err
	}
	b, err := jsonLine(v)
	if err == nil {
		_, err = j.w.Write(b)
	}
	j.err = err
	return err
}

// writeJSON prints the one JSON object of a command that prints one
// (version --json), its write error worded as every other command words
// one.
func writeJSON(inv *invocation, v any) int {
	if err := writeLine(inv, v); err != nil {
		return inv.rep.fault(fmt.Errorf("write: %w", err))
	}
	return exitOK
}

// writeAnswer prints resolve's or promote's answer. One that cannot be
// written (a full disk) exits 1, as a missing ticket does, but the work is
// done: a worker that reads only stderr must not take a promotion that
// landed for one that did not. The line names the key, what was done, and
// how to read the answer again.
func writeAnswer(inv *invocation, key, done, again string, v any) int {
	if err := writeLine(inv, v); err != nil {
		return inv.rep.faultOn(key, fmt.Errorf("%s, but the answer was not written on stdout (%w): %s", done, err, again))
	}
	return exitOK
}

func writeLine(inv *invocation, v any) error {
	b, err := jsonLine(v)
	if err == nil {
		_, err = inv.stdout.Write(b)
	}
	return err
}

// summaryLine is the last line of every JSON stream: {"summary": {...}}.
type summaryLine[T any] struct {
	Summary T `json:"summary"`
}
