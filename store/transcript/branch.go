package transcript

import (
	"fmt"
	"io"
	"slices"
)

// Branch is what one streaming pass over a pi transcript learns: the header,
// the line counts, the tree of entries, the branch pi resumes on and pi's
// context estimate at its leaf. It keeps a record per entry (ids, sizes,
// usage), about 250 bytes when the ids are pi's 8 characters, and the
// distinct model names, but none of the text of the messages, so a
// transcript ten times larger costs ten times the entries, never the bytes
// of its messages. Long ids and model names are kept as they are. The
// record costs the same however short the entry's line: an entry no
// parentId can find keeps none unless it is the last, but a hand-made file
// of the shortest entries that have ids ("[]" in a version 1 file, 3
// bytes, which pi's migration gives one) holds about 50 times its size.
// It does not change after Load and is safe for concurrent use.
type Branch struct {
	Header  Header   // the session header, the first line
	Version int64    // the format version pi reads it as (1 and 2 are migrated)
	Stats   Stats    // what the scan read and what it dropped
	Leaf    string   // id of the leaf, the last entry in file order, as Entry.ID writes it ("" when it has none)
	Len     int      // entries on the branch from the leaf to its root
	Final   Estimate // the estimate at the leaf: what pi reports on resume

	nodes     []node
	path      []int32         // the branch, root first: indexes into nodes
	firstKept map[int32]idKey // compaction node -> firstKeptEntryId
	firstPos  map[idKey]int32 // id -> first position on path, when there are compactions
	models    []string        // the distinct "provider/id" values nodes refer to
}

// Kind is what an entry adds to pi's context (buildSessionContext).
type Kind uint8

const (
	// KindOther adds nothing: a model or thinking-level change, a label, an
	// extension's own entry, an empty branch summary.
	KindOther Kind = iota
	// KindMessage adds one message that is not an assistant's: a user
	// message, a tool result, a custom message, a bash execution, a
	// non-empty branch summary.
	KindMessage
	// KindAssistant adds one assistant message: a request point.
	KindAssistant
	// KindCompaction replaces the context with its summary and the entries
	// it keeps.
	KindCompaction
)

// Node is one entry of the branch as the estimate sees it.
type Node struct {
	ID         string // the entry's id ("v1:<index>" for a version 1 entry)
	Line       int64  // physical line in the file, 1-based
	Offset     int64  // byte offset of that line
	Kind       Kind   // what the entry adds to the context
	Role       string // a message's role ("custom" for a custom_message entry, "branchSummary" for a branch_summary entry)
	StopReason string // an assistant's stopReason as recorded
	Calls      int64  // an assistant's toolCall blocks
	// Model is the "provider/id" an assistant was answered by, or a
	// model_change switches to ("" for other entries, and where either
	// half is missing).
	Model string
	// Usage is an assistant's calculateContextTokens(usage): totalTokens,
	// or input+output+cacheRead+cacheWrite when that is 0; 0 without usage
	// (its integer part, as Estimate.Tokens, should a counter not be a
	// whole number). Prompt is its input+cacheRead+cacheWrite, the prompt
	// the provider billed (clamped to ±2^62, as Usage).
	Usage, Prompt int64
}

// node is one entry reduced to what the estimate, the model and the run's
// shape need.
type node struct {
	id, parent         string
	stop               string
	role               string
	line               int64
	offset             int64
	tokens             int64   // ceil(chars/4) of the message the entry adds to the context
	usage              float64 // an assistant's calculateContextTokens(usage), as pi computes it; 0 without usage
	prompt             int64   // an assistant's input+cacheRead+cacheWrite
	calls              int32   // an assistant's toolCall blocks, capped
	model              int32   // index into Branch.models for a model_change or an assistant, else -1
	kind               Kind
	idKind, parentKind idKind
	anchor             bool // an assistant with a usage object whose stopReason is not "error" or "aborted"
	valid              bool // an assistant whose stopReason is not "error" or "aborted"
}

// Load streams a transcript from r and builds its branch. It stops reading
// where the scan stops: at the end of r, at a read error, at a line longer
// than MaxLineBytes, or, for a file pi would not load as a transcript, after
// the line that decided it (the error is then an *InvalidError). A parentId
// cycle on the branch, which would make pi loop forever, is ErrCycle wrapped
// with the entry id.
func Load(r io.Reader) (*Branch, error) {
	sc := NewScanner(r)
	b := &Branch{}
	ids := index{byID: make(map[string]int32)}
	modelIx := make(map[[2]string]int32)
	for sc.Next() {
		e := sc.Entry()
		if last := len(b.nodes) - 1; last >= 0 && !b.nodes[last].idKind.findable() {
			// An entry no parentId can find (no id, a falsy one, an
			// object) matters only as the leaf, and it no longer is:
			// keeping it would let a file of 3-byte lines ("{}", "[]",
			// "0") hold a 120-byte record each, 40 times the file.
			b.nodes = b.nodes[:last]
			delete(b.firstKept, int32(last))
		}
		i := int32(len(b.nodes))
		n := reduce(e)
		if provider, id, ok := modelOf(e); ok {
			ix, seen := modelIx[[2]string{provider, id}]
			if !seen {
				ix = int32(len(b.models))
				b.models = append(b.models, joinModel(provider, id))
				modelIx[[2]string{provider, id}] = ix
			}
			n.model = ix
		}
		b.nodes = append(b.nodes, n)
		ids.add(e.idKind, e.ID, i)
		if e.Type == "compaction" && e.HasFirstKept {
			if b.firstKept == nil {
				b.firstKept = make(map[int32]idKey)
			}
			b.firstKept[i] = idKey{e.firstKeptKind, e.FirstKeptEntryID}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	b.Header, _ = sc.Header()
	b.Version, b.Stats = sc.Version(), sc.Stats()
	if err := b.walk(&ids); err != nil {
		return nil, err
	}
	est := b.Estimator(nil)
	for range b.path {
		est.Advance()
	}
	b.Final = est.Estimate()
	if b.Len > 0 && b.nodes[b.path[b.Len-1]].idKind == idNone {
		// pi's getBranch() walks from leafId, and from a falsy one it
		// returns nothing: getContextUsage's guard finds no compaction on
		// it and reports the estimate, stale or not.
		b.Final.Unknown = false
	}
	return b, nil
}

// index is pi's byId: a Map from id to the last entry with it. Strings
// are the ids pi writes; a number or true is an id only in a hand-made
// file, and a Map tells it from the string of the same text. Entries whose
// id is falsy or an object are left out: no parentId finds them.
type index struct {
	byID  map[string]int32
	other map[idKey]int32
}

func (x *index) add(kind idKind, id string, i int32) {
	switch kind {
	case idString:
		x.byID[id] = i // a repeated id maps to its last entry
	case idNumber, idTrue:
		if x.other == nil {
			x.other = make(map[idKey]int32)
		}
		x.other[idKey{kind, id}] = i
	}
}

// findable reports whether a parentId can find an entry with an id of
// this kind: the kinds index keeps.
func (k idKind) findable() bool { return k == idString || k == idNumber || k == idTrue }

func (x *index) get(kind idKind, id string) (int32, bool) {
	switch kind {
	case idString:
		i, ok := x.byID[id]
		return i, ok
	case idNumber, idTrue:
		i, ok := x.other[idKey{kind, id}]
		return i, ok
	}
	return 0, false
}

// walk builds the branch from the leaf up through parentId, stopping at a
// root or a parent that is not in the file, as pi's walk does. The leaf is
// the last entry in file order: pi's leafId is its id, and where that id
// is falsy (or the entry has none) buildSessionContext falls back to the
// last entry, the same one; except null, on which it builds nothing.
func (b *Branch) walk(ids *index) error {
	if len(b.nodes) == 0 {
		return nil
	}
	leaf := int32(len(b.nodes) - 1)
	if b.nodes[leaf].idKind == idNull {
		// pi's leafId is then null, which buildSessionContext reads as
		// "before the first entry": no branch, an empty context.
		return nil
	}
	b.Leaf = b.nodes[leaf].id
	for i, ok := leaf, true; ok; {
		if len(b.path) == len(b.nodes) {
			return fmt.Errorf("entry %s: %w", b.nodes[i].id, ErrCycle)
		}
		b.path = append(b.path, i)
		n := &b.nodes[i]
		i, ok = ids.get(n.parentKind, n.parent)
	}
	slices.Reverse(b.path)
	b.Len = len(b.path)
	if b.firstKept != nil {
		// Only a compaction looks entries up by id on the branch.
		b.firstPos = make(map[idKey]int32, len(b.path))
		for p := len(b.path) - 1; p >= 0; p-- {
			n := &b.nodes[b.path[p]]
			b.firstPos[idKey{n.idKind, n.id}] = int32(p)
		}
	}
	return nil
}

// At returns the entry at position pos of the branch, 0 being the root.
// It panics when pos is not in [0, Len).
func (b *Branch) At(pos int) Node {
	n := &b.nodes[b.path[pos]]
	nd := Node{
		ID: n.id, Line: n.line, Offset: n.offset, Kind: n.kind, Role: n.role,
		StopReason: n.stop, Calls: int64(n.calls), Usage: whole(n.usage), Prompt: n.prompt,
	}
	if n.model >= 0 {
		nd.Model = b.models[n.model]
	}
	return nd
}

// position returns the first position on the branch of the entry with id,
// as pi's loop over the path finds it.
func (b *Branch) position(id idKey) (int, bool) {
	p, ok := b.firstPos[id]
	return int(p), ok
}

// reduce keeps of an entry what the estimate needs, applying pi's
// buildSessionContext (which entries add a message) and estimateTokens (how
// many characters each message counts).
func reduce(e *Entry) node {
	n := node{id: e.ID, parent: e.ParentID, idKind: e.idKind, parentKind: e.parentKind, line: e.Line, offset: e.Offset, model: -1}
	switch e.Type {
	case "message":
		m := &e.Message
		n.kind, n.role, n.tokens = KindMessage, m.Role, ceil4(chars(m.Role, m))
		if m.Role == "assistant" {
			n.kind, n.stop = KindAssistant, m.StopReason
			n.calls = int32(min(m.Calls, 1<<30))
			n.valid = m.StopReason != "error" && m.StopReason != "aborted"
			n.anchor = n.valid && m.HasUsage
			if m.HasUsage {
				u := m.Usage
				n.usage = u.context
				// Each counter is under 2^62, their sum not: clamped as Usage is.
				n.prompt = whole(float64(u.Input) + float64(u.CacheRead) + float64(u.CacheWrite))
			}
		}
	case "custom_message":
		// pi turns it into a message of role "custom" with the entry's content.
		n.kind, n.role, n.tokens = KindMessage, "custom", ceil4(chars("custom", &Message{Content: e.Content}))
	case "branch_summary":
		// Only a truthy summary becomes a message: an empty array does,
		// of 0 tokens.
		if e.HasSummary {
			n.kind, n.role, n.tokens = KindMessage, "branchSummary", ceil4(e.Summary)
		}
	case "compaction":
		n.kind, n.tokens = KindCompaction, ceil4(e.Summary)
	}
	return n
}

// modelOf applies buildSessionContext's model rule to one entry: a
// model_change sets the model to its provider and modelId, an assistant
// message (a failed one too) to its provider and model. It reports whether
// the entry sets the model.
func modelOf(e *Entry) (provider, id string, ok bool) {
	switch {
	case e.Type == "model_change":
		return e.Provider, e.ModelID, true
	case e.Type == "message" && e.Message.Role == "assistant":
		return e.Message.Provider, e.Message.Model, true
	}
	return "", "", false
}

// joinModel is the "provider/id" of a model, or "" when either half is
// empty (absent or not a string in the file): pi's registry finds no model
// for such a pair, so pi restores none of the transcript's.
func joinModel(provider, id string) string {
	if provider == "" || id == "" {
		return ""
	}
	return provider + "/" + id
}

// chars is pi 0.58.3's per-role character count (estimateTokens).
func chars(role string, m *Message) int64 {
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
