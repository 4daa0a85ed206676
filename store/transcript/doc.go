// Package transcript reads pi's session transcripts: JSONL files whose first
// line is a {"type":"session",...} header and whose other lines are entries
// that form a tree by id and parentId.
//
// It offers two readers and what is built on the second. ReadHeader is the bounded first-line read the
// session store does on every resolve: it never reads more than
// MaxHeaderBytes+1 bytes and judges the line the way the legacy store's
// JSON.parse did. Scanner streams the entries of a whole transcript the way
// pi 0.58.3 loads it: blank lines skipped, lines JSON.parse rejects dropped
// and counted, session lines after the header skipped (pi indexes none of
// them), version 1 and 2 files migrated in flight, and a file whose
// first parseable line is not a header with a string id rejected with an
// InvalidError that names the reason. It holds one line at a time (at most
// MaxLineBytes) and keeps of each entry only its identity (id, parentId,
// model names) and the sizes an estimate needs, so memory grows with the
// number of entries, not with the text of their messages. What Load keeps
// of an entry a parentId can reach is 16 bytes, 72 more when it adds a
// message or sets the model, and while the file is read 8 more and its id
// in a map, with any parentId that names no entry (ids as long as written;
// a version 1 file's are made from the index and cost neither): 170 to
// 300 bytes per entry while pi's own transcripts are read, 100 after, far
// below their size. The shortest entries cost the most per byte: a
// hand-made file of "[]" lines in version 1 (3 bytes, which pi's migration
// gives an id) holds about 5.5 times its size while read, one of {"id":N}
// lines about 4 times.
//
// Load builds on Scanner the branch pi resumes on (from the last entry in
// the file up through parentId) and pi's context estimate at its leaf; an
// Estimator replays that estimate request by request, which is what the
// engage package measures. ReadEnd is what the store asks at promote: in one
// pass to EOF, what pi reports at the end of a run (getContextUsage's
// tokens, or unknown after a compaction until a fresh usage; the model it
// resumes with; the branch's last message, from which LastMessage.Shape
// tells how the run ended). This is the one implementation of pi's estimate
// in sessdb; engage and the store both use it.
//
// Sizes are counted as JavaScript counts them: in UTF-16 code units of the
// text pi's UTF-8 decoder would produce, with a tool call's arguments
// measured as JSON.stringify writes the value JSON.parse read (escapes,
// number forms and repeated keys as JSON.stringify has them, not as
// written).
//
// An entry is what pi keeps in its entries: every value JSON.parse returns
// after the header except session lines. That includes an object without
// an id or with an id that is not a string, and a line that is valid JSON
// but not an object (a number, a string, an array), which has no id. Ids
// are matched as pi's byId Map matches them (the number 5 is not the
// string "5"; strings compare as the UTF-16 text Node decodes, so two
// ill-formed UTF-8 bytes are both U+FFFD, and \ud800 is not \udc00), and
// a parentId that is falsy (null, "", 0, false) or finds
// no entry ends the walk. The leaf is the last entry, whatever it is: a
// trailing 42 is a leaf with no parent, and pi's context is empty. Two pi
// quirks of the leaf's id are mirrored: a null id is read as "before the
// first entry" (no branch, an empty context, no model), and with an id
// that is otherwise falsy (absent, "", 0, false) pi's getBranch() is empty
// while its context is built from the leaf all the same, so the estimate
// after a compaction is reported, stale, rather than unknown.
//
// Texts, thinkings, tool-call names, bash commands and outputs and
// summaries are measured by JavaScript's .length, as pi measures them: an
// array (which pi never writes there) counts its elements, and a branch
// summary that is an empty array is still a message, since it is truthy.
//
// Where pi's estimate is no number, the estimate is unknown, so that no
// reading is promoted where pi has none and no threshold is crossed, as
// pi's NaN crosses none: a usage that is truthy but no object (pi anchors
// on it and sums it to NaN), a usage whose counters pi sums to NaN or to a
// string (a counter absent, or a string, an object or an array), and a
// message after the anchor that pi's estimateTokens cannot count (a text,
// thinking, tool-call name, command, output or summary that is no string
// or array, which is NaN or, when absent or null, a TypeError; a content
// pi iterates that is no array or string, a null block, a tool call
// without arguments: TypeErrors; tool-call arguments nested past 3,000
// arrays or objects, where pi's JSON.stringify may overflow its stack, a
// RangeError from about 4,100 with node 20: there sessdb has no reading even
// where pi's stack held). Such a message counts 0 in Trailing and
// Fallback.
//
// Caveat: where pi itself would compute NaN or throw elsewhere, the
// scanner reads 0 or drops the line instead; pi never writes such values.
// pi throws, in getContextUsage's guard, on a valid assistant
// after a compaction without a usage (read here as no fresh usage:
// unknown). pi throws a TypeError, and loads nothing, on a
// null line anywhere, on a line that is a string, a number or a boolean in
// a version 1 file (its migration assigns them an id), and on a header
// version that is an object with its own "toString" member; the scanner
// drops those lines (and Branch.Final and End have no reading for such a
// file, nor an Estimator at an entry written after such a line: pi cannot
// load the file as it stood then either) and reads
// that version as NaN (no migration). Version
// 1 entries get synthetic ids ("v1:<index>") where pi would draw random
// ones, so ids differ but the tree is the same.
package transcript
