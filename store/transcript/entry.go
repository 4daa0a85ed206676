package transcript

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// Entry is one transcript line after the header, reduced to what a context
// estimate needs: the entry's place in the tree and the sizes of what it
// would put into the model's context. Texts are never kept, only measured.
type Entry struct {
	Line   int64 // physical line in the file, 1-based
	Offset int64 // byte offset of that line in the file
	Index  int   // position among the lines JSON.parse accepts, the header being 0 (what v1's firstKeptEntryIndex counts)

	// Type is "" when absent or not a string, and for a line that is valid
	// JSON but not an object (pi keeps such a value among its entries).
	Type string
	// ID is the entry's id as text: a string as pi holds it (see
	// jsString: ill-formed UTF-8 read as U+FFFD, a lone escaped surrogate
	// in WTF-8), a number in its shortest form, true as "true"; "" when it
	// is absent, null, false, an object or an array. A version 1 entry gets
	// "v1:<Index>".
	ID string
	// ParentID is the parentId as ID writes it; "" for a root: a value pi's
	// walk does not follow (null, absent, "", 0, false) or cannot find (an
	// object or an array).
	ParentID string

	// Message is the "message" member of a message entry.
	Message Message
	// Content measures the entry-level "content" of a custom_message entry.
	Content Content
	// Summary is the length of the "summary" of a compaction or
	// branch_summary entry, as walker.length measures it (0 when absent).
	Summary int64
	// HasSummary is whether that summary is truthy, as pi tests a branch
	// summary before making it a message: a non-empty string, any array
	// (an empty one too), an object, true or a non-zero number.
	HasSummary bool
	// FirstKeptEntryID is a compaction's firstKeptEntryId; for a version 1
	// compaction it is derived from firstKeptEntryIndex as pi's migration
	// derives it.
	FirstKeptEntryID string
	HasFirstKept     bool // false when there is none (pi then keeps nothing before the compaction)
	// Provider and ModelID are a model_change entry's provider and modelId
	// ("" when absent or not a string).
	Provider, ModelID string

	idKind, parentKind, firstKeptKind idKind // how pi's byId and its tests of truthiness see ID, ParentID and FirstKeptEntryID
	oddSummary                        bool   // Summary is absent or no string or array: pi's .length of it is no number
	firstKeptIndex                    int    // a version 1 compaction's firstKeptEntryIndex, -1 when absent
}

// idKind is how pi's byId (a Map, which tells 5 from "5") and its tests of
// truthiness see an id, a parentId or a firstKeptEntryId.
type idKind uint8

const (
	idNone   idKind = iota // absent, "", 0 or false: falsy, so pi never looks it up
	idNull                 // null: falsy too, and a leafId of null is pi's empty context
	idString               // a non-empty string
	idNumber               // a non-zero number, written in its shortest form
	idTrue                 // true
	idObject               // an object or an array: truthy, and equal to no other value
)

// idKey is an id as pi's byId keys it.
type idKey struct {
	kind idKind
	text string
}

// ident consumes an id, parentId or firstKeptEntryId value and returns it
// as Entry.ID writes it, with its kind.
func ident(w *walker) (string, idKind) {
	switch c := w.peek(); {
	case c == '"':
		if s := jsString(w.str()); s != "" {
			return s, idString
		}
	case c == 't':
		w.skip()
		return "true", idTrue
	case c == 'n':
		w.skip()
		return "", idNull
	case c == '{' || c == '[':
		w.skip()
		return "", idObject
	case c == '-' || c >= '0' && c <= '9':
		if f, _ := w.number(); f != 0 {
			return strconv.FormatFloat(f, 'g', -1, 64), idNumber
		}
	default:
		w.skip()
	}
	return "", idNone
}

// truthy reports, without consuming it, whether the value at the cursor
// is truthy in JavaScript: anything but "", 0 (-0, 0.0, 0e5), null and
// false.
func truthy(w *walker) bool {
	switch c := w.peek(); c {
	case 'n', 'f':
		return false
	case '"':
		return w.i+1 < len(w.b) && w.b[w.i+1] != '"'
	case '{', '[', 't':
		return true
	default:
		r := w.i
		f, _ := w.number()
		w.i = r
		return f != 0
	}
}

// Message is a message entry's payload, measured.
type Message struct {
	Role       string  // "hookMessage" of a version 2 file is read as "custom", as pi migrates it
	StopReason string  // an assistant's stopReason; "" when absent or not a string
	HasUsage   bool    // "usage" is an object
	Usage      Usage   // its counters, when HasUsage
	Content    Content // the message's "content", measured
	Command    int64   // bashExecution's command length
	Output     int64   // bashExecution's output length
	Summary    int64   // a summary-role message's summary length
	// Provider and Model are an assistant's provider and model ("" when
	// absent or not a string): the model pi resumes with when it is the
	// last on the branch.
	Provider, Model string
	// Calls is the number of "toolCall" blocks in the content: what pi's
	// agent loop executes before it asks the model again.
	Calls int64

	// whether command, output and summary are absent or no string or
	// array, which pi cannot measure
	oddCommand, oddOutput, oddSummary bool
	// oddUsage: "usage" is truthy but no object (a number, a string, an
	// array, true), which pi anchors on all the same (getAssistantUsage
	// asks only that it be truthy) and sums to NaN (5.totalTokens is
	// undefined)
	oddUsage bool
}

// Usage is an assistant's usage as recorded. A counter that is absent or
// not a number reads 0; one that is not a whole number (no provider reports
// one) is truncated toward zero here, and one beyond ±2^62 reads 0, while
// the estimate uses pi's own arithmetic on the values as written (null and
// false add 0, true 1; an absent counter, a string, an object or an array
// make the sum no number, and the estimate unknown).
type Usage struct {
	Input, Output, CacheRead, CacheWrite, TotalTokens int64 // pi's names, in tokens

	// context is pi's calculateContextTokens(usage), in its float64
	// arithmetic: totalTokens, or input+output+cacheRead+cacheWrite, added
	// left to right, when totalTokens is 0.
	context float64
}

// Content measures a "content" value, which is either a string or an array
// of blocks. Lengths are in UTF-16 code units.
type Content struct {
	String    int64 // length of the content when it is a string
	Text      int64 // total length of "text" blocks' text
	Thinking  int64 // total length of "thinking" blocks' thinking
	ToolCalls int64 // for each "toolCall" block, its name's length plus JSON.stringify(arguments).length
	Images    int64 // number of "image" blocks

	odd odd // what makes pi's count of it no number, by role (see chars)
}

// odd records the values in a message that pi's estimateTokens measures and
// cannot: .length of a value that is no string or array is undefined (a
// sum of NaN), and of null or undefined a TypeError, as is iterating a
// content that is neither a string nor an array, or reading a null
// block's type. pi never writes such values; where it met one, its
// estimate would be no number.
type odd uint8

const (
	oddContent    odd = 1 << iota // the content is neither a string nor an array
	oddBlock                      // a block is null
	oddText                       // a text block's text is no string or array
	oddTruthyText                 // ... and is truthy (the only one pi's tool-result count measures)
	oddCall                       // a thinking, or a tool call's name or arguments, pi cannot measure (arguments nested past stringifyDepth included)
	oddLength                     // a command, output or summary that is no string or array
)

// decode fills e, which the caller has reset, from a line that valid
// accepted and that starts with '{'. A parentId equal to prev reuses that
// string: in a linear transcript every parent is the previous id, and this
// saves an allocation per line.
func decode(line []byte, e *Entry, prev string, nm *names, st *stringifier) {
	w := walker{b: line}
	e.Content.odd, e.oddSummary = oddContent, true // absent until seen
	w.open()
	for w.more() {
		switch string(w.key()) {
		case "type":
			e.Type, _ = w.text()
		case "id":
			e.ID, e.idKind = ident(&w)
		case "parentId":
			e.ParentID, e.parentKind = "", idNone
			if w.peek() != '"' {
				if e.ParentID, e.parentKind = ident(&w); e.parentKind == idObject || e.parentKind == idNull {
					e.parentKind = idNone // a root: no entry's id is this very object, and null is falsy
				}
				continue
			}
			// raw is prev's text only where it has no escape and no
			// ill-formed UTF-8, which jsString would rewrite.
			if raw := w.str(); string(raw) == prev && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
				e.ParentID = prev
			} else {
				e.ParentID = jsString(raw)
			}
			if e.ParentID != "" {
				e.parentKind = idString
			}
		case "message":
			e.Message = Message{}
			if w.peek() != '{' {
				w.skip()
				continue
			}
			decodeMessage(&w, &e.Message, nm, st)
		case "content":
			e.Content = content(&w, nil, st)
		case "summary":
			e.HasSummary = truthy(&w)
			e.Summary, e.oddSummary = measured(&w)
		case "firstKeptEntryId":
			e.FirstKeptEntryID, e.firstKeptKind = ident(&w)
			// Only an entry reached by parentId can be kept, and only a
			// string, a number or true can reach one.
			e.HasFirstKept = e.firstKeptKind >= idString && e.firstKeptKind != idObject
		case "provider":
			e.Provider = nm.text(&w)
		case "modelId":
			e.ModelID = nm.text(&w)
		case "firstKeptEntryIndex":
			// Read by the scanner for version 1 files only. An index past
			// math.MaxInt (on a 32-bit host) names no entry a file there
			// can have; converted, it could land on one (Go leaves an
			// out-of-range float conversion implementation-defined).
			e.firstKeptIndex = -1
			if f, ok := w.number(); ok && f >= 0 && f == math.Trunc(f) && f < 1<<53 && f <= math.MaxInt {
				e.firstKeptIndex = int(f)
			}
		default:
			w.skip()
		}
	}
}

func decodeMessage(w *walker, m *Message, nm *names, st *stringifier) {
	m.oddCommand, m.oddOutput, m.oddSummary = true, true, true // absent until seen
	m.Content.odd = oddContent
	w.open()
	for w.more() {
		switch string(w.key()) {
		case "role":
			m.Role, _ = w.text()
		case "stopReason":
			m.StopReason, _ = w.text()
		case "content":
			m.Calls = 0
			m.Content = content(w, &m.Calls, st)
		case "usage":
			m.HasUsage, m.Usage, m.oddUsage = false, Usage{}, false
			if w.peek() != '{' {
				m.oddUsage = truthy(w)
				w.skip()
				continue
			}
			m.HasUsage = true
			decodeUsage(w, &m.Usage)
		case "command":
			m.Command, m.oddCommand = measured(w)
		case "output":
			m.Output, m.oddOutput = measured(w)
		case "summary":
			m.Summary, m.oddSummary = measured(w)
		case "provider":
			m.Provider = nm.text(w)
		case "model":
			m.Model = nm.text(w)
		default:
			w.skip()
		}
	}
}

func decodeUsage(w *walker, u *Usage) {
	// input, output, cacheRead, cacheWrite, totalTokens as pi's arithmetic
	// meets them: the number (null and false read 0, true 1), whether the
	// value is truthy, and whether it makes a sum that is not a number: an
	// absent counter (undefined: NaN), a string, an object or an array
	// (string concatenation).
	var f [5]float64
	var truthy [5]bool
	notNumber := [5]bool{true, true, true, true, true}
	w.open()
	for w.more() {
		var k int
		switch string(w.key()) {
		case "input":
			k = 0
		case "output":
			k = 1
		case "cacheRead":
			k = 2
		case "cacheWrite":
			k = 3
		case "totalTokens":
			k = 4
		default:
			w.skip()
			continue
		}
		f[k], truthy[k], notNumber[k] = 0, false, false
		switch c := w.peek(); {
		case c == 't':
			w.skip()
			f[k], truthy[k] = 1, true
		case c == 'n' || c == 'f':
			w.skip()
		case c == '"':
			truthy[k], notNumber[k] = len(w.str()) > 0, true
		case c == '{' || c == '[':
			w.skip()
			truthy[k], notNumber[k] = true, true
		default:
			f[k], _ = w.number()
			truthy[k] = f[k] != 0
		}
	}
	for k, dst := range [5]*int64{&u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.TotalTokens} {
		*dst = 0
		if !notNumber[k] && math.Abs(f[k]) < 1<<62 {
			*dst = int64(f[k])
		}
	}
	// pi: usage.totalTokens || usage.input + usage.output + usage.cacheRead +
	// usage.cacheWrite. A sum pi's arithmetic makes no number of (NaN, or a
	// string) reads NaN: pi's reading is then no number, and the estimate
	// unknown.
	switch {
	case truthy[4] && notNumber[4]:
		u.context = math.NaN()
	case truthy[4]:
		u.context = f[4]
	case notNumber[0] || notNumber[1] || notNumber[2] || notNumber[3]:
		u.context = math.NaN()
	default:
		u.context = f[0] + f[1] + f[2] + f[3]
	}
}

// content measures a string or an array of content blocks; any other value
// measures zero. calls, when not nil, is incremented for every toolCall block.
func content(w *walker, calls *int64, st *stringifier) Content {
	var c Content
	switch w.peek() {
	case '"':
		c.String = literalUnits(w.str())
	case '[':
		w.open()
		for w.more() {
			if w.peek() != '{' {
				if w.peek() == 'n' {
					c.odd |= oddBlock
				}
				w.skip()
				continue
			}
			if block(w, &c, st) && calls != nil {
				*calls++
			}
		}
	default:
		c.odd |= oddContent
		w.skip()
	}
	return c
}

// measured consumes a value pi measures by its .length and returns that
// length, with whether pi's is no number (the value is no string or array).
func measured(w *walker) (int64, bool) {
	c := w.peek()
	return w.length(), c != '"' && c != '['
}

// block measures one content block and reports whether it is a tool call.
// The members may come in any order, so the sizes are gathered first and
// credited once the type is known.
func block(w *walker, c *Content, st *stringifier) (call bool) {
	var typ []byte
	var text, thinking, name int64
	var args []byte
	oddT, oddTh, oddN := true, true, true // absent until seen
	truthyT := false
	w.open()
	for w.more() {
		switch string(w.key()) {
		case "type":
			typ = nil
			if w.peek() != '"' {
				w.skip()
				continue
			}
			if typ = w.str(); bytes.IndexByte(typ, '\\') >= 0 {
				typ = []byte(unescape(typ))
			}
		case "text":
			truthyT = truthy(w)
			text, oddT = measured(w)
		case "thinking":
			thinking, oddTh = measured(w)
		case "name":
			name, oddN = measured(w)
		case "arguments":
			args = w.skip()
		default:
			w.skip()
		}
	}
	switch string(typ) {
	case "text":
		c.Text += text
		if oddT {
			c.odd |= oddText
			if truthyT {
				c.odd |= oddTruthyText
			}
		}
	case "thinking":
		c.Thinking += thinking
		if oddTh {
			c.odd |= oddCall
		}
	case "toolCall":
		c.ToolCalls += name
		if args != nil {
			c.ToolCalls += st.units(args)
		}
		if oddN || args == nil || st.deep {
			c.odd |= oddCall // JSON.stringify(undefined) has no length, and one too deep throws
		}
	case "image":
		c.Images++
	}
	return string(typ) == "toolCall"
}

// v1ID is the synthetic id of the version 1 entry at index; pi draws a
// random one in its migration, and nothing outside the file refers to it.
func v1ID(index int) string { return "v1:" + strconv.Itoa(index) }

// names interns the few strings that repeat on many lines of a transcript,
// providers and model ids, so that they cost an allocation per file rather
// than per line. It holds at most maxNames of them; past that, strings are
// simply allocated.
type names struct{ m map[string]string }

const maxNames = 256

// text consumes a string value and returns it decoded and interned, or
// consumes any other value and returns "".
func (n *names) text(w *walker) string {
	if w.peek() != '"' {
		w.skip()
		return ""
	}
	raw := w.str()
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		raw = []byte(jsText(raw)) // as Node decodes it, not as written
	}
	if s, ok := n.m[string(raw)]; ok {
		return s
	}
	s := string(raw)
	if n.m == nil {
		n.m = make(map[string]string)
	}
	if len(n.m) < maxNames {
		n.m[s] = s
	}
	return s
}
