package engage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"sessdb/store/transcript"
)

// Estimate is pi's usage-backed context estimate of one context, as pi
// 0.58.3 computes it (estimateContextTokens, and getContextUsage's null rule).
type Estimate struct {
	// Tokens is estimateContextTokens: Anchor plus Trailing, or the chars/4
	// sum over every message when no message anchors. After a compaction it
	// can be stale (see Unknown).
	Tokens int64
	// Anchor is the last valid assistant usage: totalTokens, or
	// input+output+cacheRead+cacheWrite when that is 0. AnchorEntry is its
	// entry id, "" when nothing anchors.
	Anchor      int64
	AnchorEntry string
	// Trailing is ceil(chars/4) summed over the messages after the anchor.
	Trailing int64
	// Fallback is ceil(chars/4) summed over every message, pi's estimate
	// when nothing anchors.
	Fallback int64
	// Messages is the number of messages in the context.
	Messages int
	// Unknown is true where pi's getContextUsage reports null: the branch
	// has a compaction and no assistant after it has a non-zero usage, so
	// the anchor, if any, measured the context before it was compacted.
	Unknown bool
}

// Reading is the estimate as the controller sees it: unknown where pi
// reports null.
func (e Estimate) Reading() Reading {
	if e.Unknown {
		return Reading{}
	}
	return Known(e.Tokens)
}

// Transcript is what one streaming pass over a pi transcript learns: the
// header, the line counts, the tree of entries and the estimate at the leaf.
// It keeps about 150 bytes per entry (ids, sizes, usage) and none of the
// text, so a transcript ten times larger costs ten times the entries, never
// the bytes of its messages. It does not change after Read and is safe for
// concurrent use.
type Transcript struct {
	Header  transcript.Header
	Version int64 // the format version pi reads it as (1 and 2 are migrated)
	Stats   transcript.Stats
	Leaf    string   // id of the leaf: the last entry in file order
	Branch  int      // entries on the branch from the leaf to its root
	Final   Estimate // the estimate at the leaf: what pi reports on resume

	nodes     []node
	path      []int32          // the branch, root first: indexes into nodes
	firstKept map[int32]string // compaction node -> firstKeptEntryId
	firstPos  map[string]int32 // id -> first position on path, when there are compactions
}

// node is one entry reduced to what the estimate needs.
type node struct {
	id, parent string
	stop       string
	line       int64
	tokens     int64 // ceil(chars/4) of the message the entry adds to the context
	usage      int64 // an assistant's calculateContextTokens(usage); 0 without usage
	prompt     int64 // an assistant's input+cacheRead+cacheWrite
	kind       kind
	anchor     bool // an assistant with a usage object whose stopReason is not "error" or "aborted"
	valid      bool // an assistant whose stopReason is not "error" or "aborted"
}

type kind uint8

const (
	kindOther      kind = iota // adds nothing to the context
	kindMessage                // adds one message
	kindAssistant              // adds one assistant message: a request point
	kindCompaction             // replaces the context with its summary and the kept entries
)

// ErrCycle is returned, wrapped with the entry id, when following parentId
// from the leaf comes back to an entry already walked. pi would loop forever
// on such a file.
var ErrCycle = errors.New("parentId cycle")

// ReadFile reads the transcript at path. Errors are *os.PathError-style
// "op path: err" and wrap a *transcript.InvalidError for a file that is not a
// pi transcript.
func ReadFile(path string) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, &os.PathError{Op: "read transcript", Path: path, Err: err}
	}
	return t, nil
}

// Read streams a transcript from r.
func Read(r io.Reader) (*Transcript, error) {
	sc := transcript.NewScanner(r)
	t := &Transcript{}
	byID := make(map[string]int32)
	for sc.Next() {
		e := sc.Entry()
		i := int32(len(t.nodes))
		t.nodes = append(t.nodes, reduce(e))
		byID[e.ID] = i // pi's byId: a repeated id maps to its last entry
		if e.Type == "compaction" && e.HasFirstKept {
			if t.firstKept == nil {
				t.firstKept = make(map[int32]string)
			}
			t.firstKept[i] = e.FirstKeptEntryID
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	t.Header, _ = sc.Header()
	t.Version, t.Stats = sc.Version(), sc.Stats()
	if err := t.walk(byID); err != nil {
		return nil, err
	}
	est := newEstimator(t, nil, 1)
	for pos := range t.path {
		est.add(pos)
	}
	t.Final = est.estimate()
	return t, nil
}

// walk builds the branch from the leaf (the last entry in file order, as pi
// takes it) up through parentId, stopping at a root or a parent that is not
// in the file, as pi's walk does.
func (t *Transcript) walk(byID map[string]int32) error {
	if len(t.nodes) == 0 {
		return nil
	}
	leaf := int32(len(t.nodes) - 1)
	t.Leaf = t.nodes[leaf].id
	for i, ok := leaf, true; ok; {
		if len(t.path) == len(t.nodes) {
			return fmt.Errorf("entry %s: %w", t.nodes[i].id, ErrCycle)
		}
		t.path = append(t.path, i)
		p := t.nodes[i].parent
		i, ok = byID[p]
		ok = ok && p != ""
	}
	slices.Reverse(t.path)
	t.Branch = len(t.path)
	if t.firstKept != nil {
		// Only a compaction looks entries up by id on the branch.
		t.firstPos = make(map[string]int32, len(t.path))
		for p := len(t.path) - 1; p >= 0; p-- {
			t.firstPos[t.nodes[t.path[p]].id] = int32(p)
		}
	}
	return nil
}

// reduce keeps of an entry what the estimate needs, applying pi's
// buildSessionContext (which entries add a message) and estimateTokens (how
// many characters each message counts).
func reduce(e *transcript.Entry) node {
	n := node{id: e.ID, parent: e.ParentID, line: e.Line}
	switch e.Type {
	case "message":
		m := &e.Message
		n.kind, n.tokens = kindMessage, ceil4(chars(m.Role, m))
		if m.Role == "assistant" {
			n.kind, n.stop = kindAssistant, m.StopReason
			n.valid = m.StopReason != "error" && m.StopReason != "aborted"
			n.anchor = n.valid && m.HasUsage
			if m.HasUsage {
				u := m.Usage
				n.usage = u.TotalTokens
				if n.usage == 0 {
					n.usage = u.Input + u.Output + u.CacheRead + u.CacheWrite
				}
				n.prompt = u.Input + u.CacheRead + u.CacheWrite
			}
		}
	case "custom_message":
		// pi turns it into a message of role "custom" with the entry's content.
		n.kind, n.tokens = kindMessage, ceil4(chars("custom", &transcript.Message{Content: e.Content}))
	case "branch_summary":
		// Only a non-empty summary becomes a message.
		if e.Summary > 0 {
			n.kind, n.tokens = kindMessage, ceil4(e.Summary)
		}
	case "compaction":
		n.kind, n.tokens = kindCompaction, ceil4(e.Summary)
	}
	return n
}

// chars is pi 0.58.3's per-role character count (estimateTokens).
func chars(role string, m *transcript.Message) int64 {
	c := m.Content
	switch role {
	case "user":
		return c.String + c.Text // images in user messages count 0 in 0.58.3
	case "assistant":
		return c.Text + c.Thinking + c.ToolCalls // a string content iterates as characters with no type: 0
	case "custom", "toolResult":
		return c.String + c.Text + 4800*c.Images
	case "bashExecution":
		return m.Command + m.Output
	case "branchSummary", "compactionSummary":
		return m.Summary
	}
	return 0
}

func ceil4(chars int64) int64 { return (chars + 3) / 4 }
