package transcript

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
)

// Branch is what one streaming pass over a pi transcript learns: the header,
// the line counts, the tree of entries, the branch pi resumes on and pi's
// context estimate at its leaf. It keeps none of the text of the messages,
// so a transcript ten times larger costs ten times the entries, never the
// bytes of its messages: 16 bytes per entry (its line, offset and id), 72
// more for one that adds a message or sets the model, the branch's ids and
// the distinct model names, about 100 bytes per entry of what pi writes.
// An entry no parentId can find keeps none unless it is the last. While
// the file is read, a map holds every id once besides (see the package
// doc for what that costs at most). It does not change after Load and is
// safe for concurrent use.
type Branch struct {
	Header  Header   // the session header, the first line
	Version int64    // the format version pi reads it as (1 and 2 are migrated)
	Stats   Stats    // what the scan read and what it dropped
	Leaf    string   // id of the leaf, the last entry in file order, as Entry.ID writes it ("" when it has none)
	Len     int      // entries on the branch from the leaf to its root
	Final   Estimate // the estimate at the leaf: what pi reports on resume

	v1        bool             // a version 1 file: ids are "v1:<index>", each entry's parent the one before, the branch every entry
	throwsAt  int64            // the line of the first line pi's load throws on (Scanner.throwsAt), 0 when none
	recs      chunked[rec]     // every entry that may be on the branch, in file order
	data      chunked[payload] // what the entries that add a message or set the model add, in file order
	off, line wide             // the high halves of rec.off and rec.line
	index     wide             // version 1: the high half of rec.id, the entry's index
	path      []int32          // the branch, root first: indexes into recs (nil for version 1, whose branch is every entry)
	ids       []string         // the branch's ids, by position (not version 1, whose ids are made from the index)
	firstKept map[int32]int64  // compaction entry -> its firstKeptEntryId's key (see key)
	firstPos  map[int64]int32  // such a key -> its first position on the branch
	models    []string         // the distinct "provider/id" values payloads refer to
}

// rec is one entry as the read keeps it whatever it is: 16 bytes, since a
// hand-made file can hold an entry in every 3 bytes. Line and offset keep
// their low halves here and their high halves in Branch.line and
// Branch.off, which change once every 4 Gi lines or bytes.
type rec struct {
	off, line uint32
	// id is, for version 1, the low half of the entry's index; otherwise
	// the entry's id's slot in the read's ids when a parentId can find it,
	// else -1-kind, its idKind.
	id   int32
	data int32 // index into Branch.data, -1 when the entry adds nothing to the context and sets no model
}

// payload is what an entry that adds a message or sets the model keeps:
// what the estimate, the model and the run's shape need.
type payload struct {
	role, stop string
	tokens     int64   // ceil(chars/4) of the message the entry adds to the context
	usage      float64 // an assistant's calculateContextTokens(usage), as pi computes it; 0 without usage
	prompt     int64   // an assistant's input+cacheRead+cacheWrite
	calls      int32   // an assistant's toolCall blocks, capped
	model      int32   // index into Branch.models for a model_change or an assistant, else -1
	kind       Kind
	anchor     bool // an assistant with a truthy usage (an object, or one pi sums to NaN) whose stopReason is not "error" or "aborted"
	valid      bool // an assistant whose stopReason is not "error" or "aborted"
	odd        bool // pi's estimateTokens of the message is no number (see odd in entry.go); tokens counts it 0
}

// none is the payload of an entry that has none.
var none = payload{model: -1}

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

// Load streams a transcript from r and builds its branch. It stops reading
// where the scan stops: at the end of r, at a read error, at a line longer
// than MaxLineBytes, or, for a file pi would not load as a transcript, after
// the line that decided it (the error is then an *InvalidError). A parentId
// cycle on the branch, which would make pi loop forever, is ErrCycle wrapped
// with the entry id.
func Load(r io.Reader) (*Branch, error) { return load(NewScanner(r)) }

func load(sc *Scanner) (*Branch, error) {
	b := &Branch{}
	if _, err := sc.Header(); err == nil {
		b.v1 = sc.Version() < 2
	}
	var ids slots
	var parents chunked[int32] // not version 1: each rec's parentId's slot, -1 when it finds nothing
	// An entry no parentId can find is dropped when another follows it,
	// so its parentId and firstKeptEntryId get slots only once it is the
	// leaf: a slot outlives the entry that made it.
	var leafParent, leafKept idKey
	leafKeeps := false
	modelIx := make(map[[2]string]int32)
	for sc.Next() {
		e := sc.Entry()
		if last := int32(b.recs.n - 1); last >= 0 && !b.idKind(last).findable() {
			// An entry no parentId can find (no id, a falsy one, an
			// object) matters only as the leaf, and it no longer is:
			// keeping it would let a file of 3-byte lines ("{}", "[]",
			// "0") hold a record each.
			if b.recs.at(last).data >= 0 {
				b.data.pop()
			}
			b.recs.pop()
			parents.pop() // never version 1, whose ids are all strings
			// b.off and b.line may keep a note of its high halves: the
			// next entry takes its index, and has them too or higher ones.
			delete(b.firstKept, last)
		}
		i := int32(b.recs.n)
		x := rec{off: b.off.add(i, e.Offset), line: b.line.add(i, e.Line), data: -1}
		if b.v1 {
			x.id = int32(b.index.add(i, int64(e.Index)))
		} else {
			x.id = -1 - int32(e.idKind)
			if e.idKind.findable() {
				x.id = ids.slot(e.idKind, e.ID)
				ids.last[x.id] = i // a repeated id finds its last entry
			}
			p := int32(-1)
			switch {
			case !e.idKind.findable():
				leafParent, leafKeeps = idKey{e.parentKind, e.ParentID}, false
			case e.parentKind.findable():
				p = ids.slot(e.parentKind, e.ParentID)
			}
			parents.push(p)
		}
		provider, id, setsModel := modelOf(e)
		if d := reduce(e); d.kind != KindOther || setsModel {
			if setsModel {
				ix, seen := modelIx[[2]string{provider, id}]
				if !seen {
					ix = int32(len(b.models))
					b.models = append(b.models, joinModel(provider, id))
					modelIx[[2]string{provider, id}] = ix
				}
				d.model = ix
			}
			x.data = int32(b.data.n)
			b.data.push(d)
		}
		b.recs.push(x)
		if e.Type == "compaction" && e.HasFirstKept {
			if b.firstKept == nil {
				b.firstKept = make(map[int32]int64)
			}
			switch {
			case b.v1:
				b.firstKept[i] = int64(e.firstKeptIndex) // its id is v1ID of that index
			case !e.idKind.findable():
				leafKept, leafKeeps = idKey{e.firstKeptKind, e.FirstKeptEntryID}, true
			default:
				b.firstKept[i] = int64(ids.slot(e.firstKeptKind, e.FirstKeptEntryID))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if leaf := int32(b.recs.n - 1); leaf >= 0 && !b.idKind(leaf).findable() {
		if leafParent.kind.findable() {
			*parents.ptr(leaf) = ids.slot(leafParent.kind, leafParent.text)
		}
		if leafKeeps {
			b.firstKept[leaf] = int64(ids.slot(leafKept.kind, leafKept.text))
		}
	}
	b.Header, _ = sc.Header()
	b.Version, b.Stats = sc.Version(), sc.Stats()
	if err := b.walk(&ids, &parents); err != nil {
		return nil, err
	}
	est := b.Estimator(nil)
	for range b.Len {
		est.Advance()
	}
	b.Final = est.Estimate()
	if b.Len > 0 && b.idKind(b.at(b.Len-1)) == idNone {
		// pi's getBranch() walks from leafId, and from a falsy one it
		// returns nothing: getContextUsage's guard finds no compaction on
		// it and reports the estimate, stale or not (but no number where
		// it has none).
		b.Final.Unknown = est.noNumber()
	}
	b.throwsAt = sc.throwsAt
	if b.throwsAt > 0 {
		// pi's load throws on a line the scan dropped: pi loads nothing,
		// and has no reading on resume (End has none either).
		b.Final.Unknown = true
	}
	return b, nil
}

// LoadThrowsBefore reports whether pi's load of the file's lines before
// line (the file as it stood when the entry at line was written) throws:
// one of them is a line pi's load throws on, which the scan dropped (see
// the package doc). pi then has no reading there, as it has none for the
// whole file (Final): a request at line had none before it was sent.
func (b *Branch) LoadThrowsBefore(line int64) bool {
	return b.throwsAt > 0 && b.throwsAt < line
}

// idKind is how rec i's id is seen by pi's byId.
func (b *Branch) idKind(i int32) idKind {
	if id := b.recs.at(i).id; !b.v1 && id < 0 {
		return idKind(-1 - id)
	}
	return idString // a version 1 id, or one a slot holds: string, number or true, all findable
}

// slots is pi's byId: a Map from id to the last entry with it. Strings
// are the ids pi writes; a number or true is an id only in a hand-made
// file, and a Map tells it from the string of the same text. Each id, and
// each parentId and firstKeptEntryId that can find one, gets a slot, so
// that an entry keeps an int32 where it would keep a string.
type slots struct {
	byID map[string]int32
	// nums keys a number by its float64 bits, which its text (the
	// shortest form that reads back as the same number) tells apart
	// exactly; 0, the one value with two signs, is no id.
	nums   map[uint64]int32
	truthy int32   // the slot of the id true, plus one; 0 while it has none
	last   []int32 // slot -> the last entry with this id, -1 while none
}

// slot returns the slot of an id of a kind findable reports true for, as
// Entry.ID writes it.
func (x *slots) slot(kind idKind, id string) int32 {
	switch kind {
	case idString:
		if s, ok := x.byID[id]; ok {
			return s
		}
		if x.byID == nil {
			x.byID = make(map[string]int32)
		}
		x.byID[id] = int32(len(x.last))
	case idNumber:
		f, _ := strconv.ParseFloat(id, 64) // ±Inf reads back from "+Inf", "-Inf"
		k := math.Float64bits(f)
		if s, ok := x.nums[k]; ok {
			return s
		}
		if x.nums == nil {
			x.nums = make(map[uint64]int32)
		}
		x.nums[k] = int32(len(x.last))
	default: // idTrue
		if x.truthy > 0 {
			return x.truthy - 1
		}
		x.truthy = int32(len(x.last)) + 1
	}
	x.last = append(x.last, -1)
	return int32(len(x.last) - 1)
}

// texts calls f with every slot want reports true for and its id's text,
// as Entry.ID writes it. A number's text is made only then.
func (x *slots) texts(want func(slot int32) bool, f func(slot int32, text string)) {
	for id, s := range x.byID {
		if want(s) {
			f(s, id)
		}
	}
	for k, s := range x.nums {
		if want(s) {
			f(s, strconv.FormatFloat(math.Float64frombits(k), 'g', -1, 64))
		}
	}
	if s := x.truthy - 1; s >= 0 && want(s) {
		f(s, "true")
	}
}

// findable reports whether a parentId can find an entry with an id of
// this kind: the kinds byId keeps.
func (k idKind) findable() bool { return k == idString || k == idNumber || k == idTrue }

// walk builds the branch from the leaf up through parentId, stopping at a
// root or a parent that is not in the file, as pi's walk does. The leaf is
// the last entry in file order: pi's leafId is its id, and where that id
// is falsy (or the entry has none) buildSessionContext falls back to the
// last entry, the same one; except null, on which it builds nothing.
func (b *Branch) walk(ids *slots, parents *chunked[int32]) error {
	n := b.recs.n
	if n == 0 {
		return nil
	}
	leaf := int32(n - 1)
	if b.idKind(leaf) == idNull {
		// pi's leafId is then null, which buildSessionContext reads as
		// "before the first entry": no branch, an empty context.
		return nil
	}
	if b.v1 {
		// pi's migration makes every entry the child of the one before.
		b.Len = n
	} else {
		for i := leaf; ; {
			if len(b.path) == n {
				text := ""
				ids.texts(func(s int32) bool { return s == b.recs.at(i).id }, func(_ int32, t string) { text = t })
				return fmt.Errorf("entry %s: %w", text, ErrCycle)
			}
			b.path = append(b.path, i)
			p := parents.at(i)
			if p < 0 || ids.last[p] < 0 {
				break
			}
			i = ids.last[p]
		}
		slices.Reverse(b.path)
		b.Len = len(b.path)
		// The branch's ids by position: an entry on it is the last with
		// its id, so a slot is at one position at most.
		pos := ids.last
		for s := range pos {
			pos[s] = -1
		}
		for p, i := range b.path {
			if s := b.recs.at(i).id; s >= 0 {
				pos[s] = int32(p)
			}
		}
		b.ids = make([]string, b.Len)
		ids.texts(func(s int32) bool { return pos[s] >= 0 }, func(s int32, t string) { b.ids[pos[s]] = t })
	}
	b.Leaf = b.id(b.Len - 1)
	if b.firstKept != nil {
		// Only a compaction looks entries up by id on the branch, and
		// only its firstKeptEntryId.
		b.firstPos = make(map[int64]int32, len(b.firstKept))
		for _, k := range b.firstKept {
			b.firstPos[k] = -1
		}
		for p := b.Len - 1; p >= 0; p-- {
			if k, ok := b.key(p); ok {
				if _, want := b.firstPos[k]; want {
					b.firstPos[k] = int32(p)
				}
			}
		}
	}
	return nil
}

// at is the rec of the entry at position pos of the branch.
func (b *Branch) at(pos int) int32 {
	if b.v1 {
		return int32(pos)
	}
	return b.path[pos]
}

// payload is what the entry at position pos adds.
func (b *Branch) payload(pos int) *payload {
	if d := b.recs.at(b.at(pos)).data; d >= 0 {
		return b.data.ptr(d)
	}
	return &none
}

// key is how a firstKeptEntryId finds the entry at position pos: its
// index in a version 1 file, else its id's slot; false when no id finds it.
func (b *Branch) key(pos int) (int64, bool) {
	i := b.at(pos)
	x := b.recs.at(i)
	if b.v1 {
		return b.index.at(i, uint32(x.id)), true
	}
	return int64(x.id), x.id >= 0
}

// id is the id of the entry at position pos, as Entry.ID writes it.
func (b *Branch) id(pos int) string {
	if b.v1 {
		i := b.at(pos)
		return v1ID(int(b.index.at(i, uint32(b.recs.at(i).id))))
	}
	return b.ids[pos]
}

// At returns the entry at position pos of the branch, 0 being the root.
// It panics when pos is not in [0, Len).
func (b *Branch) At(pos int) Node {
	if pos < 0 || pos >= b.Len {
		panic(fmt.Sprintf("transcript: position %d of a branch of %d", pos, b.Len))
	}
	i := b.at(pos)
	x := b.recs.at(i)
	d := b.payload(pos)
	nd := Node{
		ID: b.id(pos), Line: b.line.at(i, x.line), Offset: b.off.at(i, x.off), Kind: d.kind, Role: d.role,
		StopReason: d.stop, Calls: int64(d.calls), Usage: whole(d.usage), Prompt: d.prompt,
	}
	if d.model >= 0 {
		nd.Model = b.models[d.model]
	}
	return nd
}

// position returns the first position on the branch of the entry a
// firstKeptEntryId of this key finds, as pi's loop over the path finds it.
func (b *Branch) position(k int64) (int, bool) {
	p, ok := b.firstPos[k]
	return int(p), ok && p >= 0
}

// reduce keeps of an entry what the estimate needs, applying pi's
// buildSessionContext (which entries add a message) and estimateTokens (how
// many characters each message counts).
func reduce(e *Entry) payload {
	d := payload{model: -1}
	switch e.Type {
	case "message":
		m := &e.Message
		n, odd := chars(m.Role, m)
		d.kind, d.role, d.tokens, d.odd = KindMessage, m.Role, ceil4(n), odd
		if m.Role == "assistant" {
			d.kind, d.stop = KindAssistant, m.StopReason
			d.calls = int32(min(m.Calls, 1<<30))
			d.valid = m.StopReason != "error" && m.StopReason != "aborted"
			d.anchor = d.valid && (m.HasUsage || m.oddUsage)
			if m.oddUsage {
				// pi's calculateContextTokens of it is NaN: its estimate,
				// and so this one, is no number until the next anchor.
				d.usage = math.NaN()
			}
			if m.HasUsage {
				u := m.Usage
				d.usage = u.context
				// Each counter is under 2^62, their sum not: clamped as Usage is.
				d.prompt = whole(float64(u.Input) + float64(u.CacheRead) + float64(u.CacheWrite))
			}
		}
	case "custom_message":
		// pi turns it into a message of role "custom" with the entry's content.
		n, odd := chars("custom", &Message{Content: e.Content})
		d.kind, d.role, d.tokens, d.odd = KindMessage, "custom", ceil4(n), odd
	case "branch_summary":
		// Only a truthy summary becomes a message: an empty array does,
		// of 0 tokens.
		if e.HasSummary {
			d.kind, d.role, d.tokens, d.odd = KindMessage, "branchSummary", ceil4(e.Summary), e.oddSummary
		}
	case "compaction":
		d.kind, d.tokens, d.odd = KindCompaction, ceil4(e.Summary), e.oddSummary
	}
	return d
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
func chars(role string, m *Message) (n int64, odd bool) {
	c := m.Content
	switch role {
	case "user":
		// A content that is no string or array counts 0: pi iterates
		// only an array.
		return c.String + c.Text, c.odd&(oddBlock|oddTruthyText) != 0 // images in user messages count 0 in 0.58.3
	case "assistant":
		// A string content iterates as characters with no type: 0.
		return c.Text + c.Thinking + c.ToolCalls, c.odd&(oddContent|oddBlock|oddText|oddCall) != 0
	case "custom", "toolResult":
		return c.String + c.Text + 4800*c.Images, c.odd&(oddContent|oddBlock|oddTruthyText) != 0
	case "bashExecution":
		return m.Command + m.Output, m.oddCommand || m.oddOutput
	case "branchSummary", "compactionSummary":
		return m.Summary, m.oddSummary
	}
	return 0, false
}

func ceil4(chars int64) int64 { return (chars + 3) / 4 }

// chunked is an append-only column kept in chunks of chunkLen: growing it
// copies nothing and leaves at most one chunk unused, where append's
// growth would copy the whole column and leave up to a fifth of it unused.
type chunked[T any] struct {
	c [][]T
	n int
}

const chunkBits = 12
const chunkLen = 1 << chunkBits

func (c *chunked[T]) push(v T) {
	if k := len(c.c); k == 0 || len(c.c[k-1]) == chunkLen {
		size := chunkLen
		if k == 0 {
			size = 16 // a small transcript does not pay for a whole chunk
		}
		c.c = append(c.c, make([]T, 0, size))
	}
	k := len(c.c) - 1
	c.c[k] = append(c.c[k], v)
	c.n++
}

// pop removes the last element, if any.
func (c *chunked[T]) pop() {
	k := len(c.c) - 1
	if k < 0 {
		return
	}
	if c.c[k] = c.c[k][:len(c.c[k])-1]; len(c.c[k]) == 0 {
		c.c = c.c[:k]
	}
	c.n--
}

func (c *chunked[T]) at(i int32) T { return c.c[i>>chunkBits][i&(chunkLen-1)] }

func (c *chunked[T]) ptr(i int32) *T { return &c.c[i>>chunkBits][i&(chunkLen-1)] }

// wide holds the high halves of a column of int64 whose records keep the
// low halves: the records from which the high half changes. A line, an
// offset or an index changes its high half once in 4 Gi, so this is
// empty for any file under 4 GiB.
type wide struct {
	from []int32
	hi   []uint32
}

// add notes v as the value of record i, the next one, and returns its low
// half. Values must not decrease from record to record.
func (h *wide) add(i int32, v int64) uint32 {
	hi := uint32(uint64(v) >> 32)
	if k := len(h.hi); k == 0 && hi != 0 || k > 0 && h.hi[k-1] != hi {
		h.from = append(h.from, i)
		h.hi = append(h.hi, hi)
	}
	return uint32(v)
}

// at is record i's value, whose low half is lo.
func (h *wide) at(i int32, lo uint32) int64 {
	k := sort.Search(len(h.from), func(k int) bool { return h.from[k] > i })
	var hi uint32
	if k > 0 {
		hi = h.hi[k-1]
	}
	return int64(uint64(hi)<<32 | uint64(lo))
}
