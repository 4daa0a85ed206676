package transcript

import (
	"errors"
	"fmt"
	"io"

	"sessdb/internal/readerr"
)

// End is what pi 0.58.3 reports at the end of a run on a transcript: the
// context reading of getContextUsage(), the model it resumes with, and the
// branch's last message.
type End struct {
	// Tokens is getContextUsage().tokens: pi's estimate at the leaf. Where
	// a usage counter is not a whole number, or is beyond ±2^62 (no
	// provider writes either), pi's estimate has a fraction or no int64
	// holds it: Tokens is then Estimate.Tokens (its floor, or ±2^62) and
	// Known is false, for no reading but pi's own is ever stored.
	// It is the reading of the context pi rebuilds from the file, which
	// the next run resumes with. The pi that wrote the file can have read
	// less at the end of its run in one case: its retries ran out on
	// answers cut off mid-stream. pi drops each failed answer it retries
	// from its memory, and the file keeps them. With 4 such answers of 500
	// tokens each, that pi read 101003 and the file reads 102503
	// (engage/testdata/retries-in-a-row.jsonl).
	Tokens int64
	// Known is false where pi reports null: the branch has a compaction and
	// no assistant after it measured the compacted context yet; and where
	// pi's reading is no number (Estimate.Unknown), which is no reading,
	// or is one no int64 holds (see Tokens); and where pi cannot load the
	// file at all (a null line, or in a version 1 file a string, number or
	// boolean line: its load throws a TypeError), which the scan drops. Tokens is
	// then the stale figure pi does not show. pi shows it, and Known is
	// true, when the last entry's id is falsy (absent, "", 0, false):
	// getBranch() is then empty, and getContextUsage's guard finds no
	// compaction on it.
	Known bool
	// Model is buildSessionContext's model, "provider/id" as pi holds it
	// (not normalised; ill-formed UTF-8 reads U+FFFD, as Node decodes it,
	// and so does a lone escaped surrogate, which UTF-8 cannot write): the
	// branch's last model_change or assistant message, failed answers
	// included. "" when the branch has none, or when the last
	// one lacks a provider or an id (pi's registry then finds no model to
	// restore). pi also restores no model when the context holds no message;
	// Model still names the last one recorded.
	Model string
	// Last is the branch's last message.
	Last LastMessage
	// Invalid is non-nil when pi would not load the file as a transcript
	// (empty, no session header, a header id that is not a string). pi
	// starts such a file over with a fresh header, so what it reports is
	// that of an empty session, which the fields above then hold: 0 tokens,
	// known, no model, no message.
	Invalid *InvalidError
}

// LastMessage is the branch's last entry that puts a message into pi's
// context: a message entry of any role, a custom_message entry (role
// "custom") or a non-empty branch_summary entry (role "branchSummary").
// Compactions, model and thinking-level changes, labels and extensions' own
// entries are not messages and are passed over. The zero value (Line 0) is
// a branch with no message.
type LastMessage struct {
	Entry  string // entry id
	Line   int64  // physical line in the file, 1-based; 0 when the branch has no message
	Offset int64  // byte offset of that line in the file
	// Role is the message's role as recorded ("hookMessage" of a version 2
	// file reads as "custom", as pi migrates it).
	Role string
	// StopReason is an assistant's stopReason as recorded: pi writes "stop",
	// "length", "toolUse", "error" or "aborted".
	StopReason string
	// Calls is the number of an assistant's toolCall blocks: the tools it
	// asked for.
	Calls int64
}

// Shape is how a run ended, judged from what it left at the end of the
// transcript's branch. The values are tokens for logs and records.
type Shape string

const (
	// Answered: the branch ends in an assistant message that ended the
	// turn: its stopReason is not an error and it asked for no tool.
	Answered Shape = "answered"
	// Errored: the branch ends in an assistant message whose stopReason is
	// "error" or "aborted" (pi ends the run there without running any tool
	// it asked for).
	Errored Shape = "errored"
	// Unanswered: the branch ends in something the model has not answered:
	// a user message, a tool result, an assistant message that asked for
	// tools, a custom or bash-execution message, a branch summary, or no
	// message at all.
	Unanswered Shape = "unanswered"
	// Unchanged: the run appended nothing. The transcript alone cannot tell
	// it; the store decides it from sizes, and Shape never returns it.
	Unchanged Shape = "unchanged"
	// Unknown: the run appended something that could not be read as pi
	// reads it, so how it ended is not known: ReadEnd failed on a line
	// longer than MaxLineBytes (which pi loads) or on a parentId cycle (on
	// which pi loops). Any of the shapes above may be the truth, so no
	// other token may stand for it; the store decides it from ReadEnd's
	// error, and Shape never returns it.
	Unknown Shape = "unknown"
)

// Shape classifies the message by pi 0.58.3's agent loop, which ends a run
// on an assistant message whose stopReason is "error" or "aborted", runs
// the tools of any other assistant message that has toolCall blocks and asks
// the model again, and otherwise ends the turn. So by stopReason:
//
//   - "error", "aborted": Errored, even with tool calls (pi runs none);
//   - "stop": Answered;
//   - "length" (the answer hit the output limit): Answered. pi neither
//     retries nor reports an error, anchors its usage like any other, and
//     the next prompt continues from the cut answer; the turn ended;
//   - "toolUse": Unanswered, since the tool results never came. A "toolUse"
//     without any toolCall block is Answered, because pi's loop decides on
//     the blocks and ends the turn there;
//   - anything else (absent, or a reason a later pi adds): decided like
//     "stop", on the blocks, as pi's loop decides.
//
// Any message that is not an assistant's is Unanswered: custom messages go
// to the model as user messages, bash executions are the user's input, and
// a branch summary stands for the branch the user left.
func (m LastMessage) Shape() Shape {
	if m.Role != "assistant" {
		return Unanswered
	}
	switch m.StopReason {
	case "error", "aborted":
		return Errored
	}
	if m.Calls > 0 {
		return Unanswered
	}
	return Answered
}

// End returns what pi reports at the end of a run on this transcript.
func (b *Branch) End() End {
	f := b.Final
	exact := !f.Fractional && f.Tokens > -(1<<62) && f.Tokens < 1<<62
	e := End{Tokens: f.Tokens, Known: !f.Unknown && exact}
	modelSeen, lastSeen := false, false
	for pos := b.Len - 1; pos >= 0 && !(modelSeen && lastSeen); pos-- {
		n := b.payload(pos)
		if !modelSeen && n.model >= 0 {
			e.Model, modelSeen = b.models[n.model], true
		}
		if !lastSeen && (n.kind == KindMessage || n.kind == KindAssistant) {
			nd := b.At(pos)
			e.Last, lastSeen = LastMessage{Entry: nd.ID, Line: nd.Line, Offset: nd.Offset, Role: n.role, StopReason: n.stop, Calls: int64(n.calls)}, true
		}
	}
	return e
}

// ReadEnd reads a transcript from r to its end, in one pass, and returns
// what pi 0.58.3 reports at the end of a run on it. It holds one line at a
// time and a record per entry, never the text of a message, so it can sit
// behind an io.TeeReader while the file is copied: it reads r to EOF
// whatever it finds, so the copy is whole.
//
// A file pi would not load as a transcript is not an error: End.Invalid
// says why, and End holds what pi reports for it (pi starts it over). The
// error is non-nil only where pi's answer cannot be given: reading r failed
// (then ReadEnd returns at once), a line is longer than MaxLineBytes
// (ErrLineTooLong), or parentId links on the branch form a cycle, on which
// pi would loop forever (ErrCycle). The End is then the zero value.
func ReadEnd(r io.Reader) (End, error) {
	cr := &readerr.Reader{R: r}
	b, err := Load(cr)
	var inv *InvalidError
	switch {
	case cr.Err != nil:
		return End{}, err
	case err == nil, errors.As(err, &inv), errors.Is(err, ErrLineTooLong):
		// The scan stopped early or reached EOF: drain the rest, so that
		// every byte passes through r.
		if _, derr := io.Copy(io.Discard, cr); derr != nil {
			return End{}, fmt.Errorf("read transcript: %w", derr)
		}
	}
	switch {
	case inv != nil:
		return End{Known: true, Invalid: inv}, nil
	case err != nil:
		return End{}, err
	}
	return b.End(), nil
}
