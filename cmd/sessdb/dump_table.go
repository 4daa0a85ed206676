package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sessdb/store"
	"sessdb/store/legacy"
)

// A keyTable is dump's key table as it is held until the walk ends (a
// table needs every row for its widths): each key's cells, made
// printable as the key is read, and not its report. A report held whole
// until then, with what it points to, was about 2.7 KB a key, where its
// row is a few hundred bytes.
type keyTable struct {
	verify, wide bool
	ncols        int // cells in a row; 0 until the first
	rows         []tableRow
}

// A tableRow is one key's cells, but for its ages, which are written
// against the time the table is written, as they were when every report
// was held: the cells of those are empty until then.
type tableRow struct {
	cells []string
	ages  [2]heldAge // PROMOTED's, and with --wide AGE's
}

// A heldAge is an age cell to write at the table's time: cells[cell]
// becomes the age of at, and suffix after it. cell 0 (KEY's) is none.
type heldAge struct {
	cell   int
	at     time.Time
	suffix string
}

// add makes r's row.
func (t *keyTable) add(r store.KeyReport) {
	var held tableRow
	if t.ncols == 0 {
		t.ncols = len(t.titles())
	}
	row := make([]string, 0, t.ncols)
	row = append(row, r.Name, verdictCell(r.Verdict))
	if t.verify {
		row = append(row, verifyCell(r.Verify))
	}
	row = append(row, orDash(string(r.Layout)), "-")
	// A link's own size is no conversation's: sessdb never follows
	// it, and stats counts no bytes for it either.
	if tr := r.Transcript; tr != nil && tr.Regular {
		row[len(row)-1] = strconv.FormatInt(tr.Bytes, 10)
	}
	if t.wide {
		if cell, at := ageCell(r.Transcript); at != nil {
			held.ages[1] = heldAge{cell: len(row), at: *at}
			row = append(row, "")
		} else {
			row = append(row, cell)
		}
	}
	promoted := "-"
	if r.LastPromotion != nil {
		held.ages[0] = heldAge{cell: len(row), at: *r.LastPromotion}
		promoted = ""
	} else if r.Transcript != nil {
		held.ages[0] = heldAge{cell: len(row), at: r.Transcript.ModTime, suffix: " (mtime)"}
		promoted = ""
	}
	chain := "-"
	if r.ResumeChain != nil {
		chain = strconv.FormatUint(*r.ResumeChain, 10)
	}
	ctx := contextCell(r.Context, t.wide)
	// A legacy chain or context there but unreadable shows as a
	// venue or pi-version does, not as the 0 or none it reads as.
	if slices.Contains(r.LegacyUnreadable, legacy.ResumeChainName) {
		chain = unreadableCell
	}
	if slices.Contains(r.LegacyUnreadable, legacy.ContextName) {
		ctx = unreadableCell
	}
	row = append(row, promoted, quoted(r.PiVersion), quoted(r.Venue), chain, ctx)
	if t.wide {
		gen := "-"
		if r.Gen > 0 {
			gen = strconv.FormatUint(r.Gen, 10)
		}
		row = append(row, gen, metaCell(r.MetaPages))
	}
	row = append(row, orDash(strings.Join(notes(r), "; ")))
	for i := range row {
		row[i] = printable(row[i]) // names, stamps and errors come from the disk
	}
	held.cells = row
	t.rows = append(t.rows, held)
}

func (t *keyTable) titles() []column {
	cols := []column{{"KEY", 32}, {"VERDICT", 23}}
	if t.verify {
		cols = append(cols, column{"VERIFY", 13})
	}
	// Numbers are never cut: BYTES and CHAIN have no max.
	cols = append(cols, column{"LAYOUT", 6}, column{"BYTES", 0})
	if t.wide {
		cols = append(cols, column{"AGE", 0})
	}
	// PROMOTED fits "3652058d ago (mtime)": the largest age there is (year
	// 1 to 9999), and the mark that says a legacy key's clock is its mtime.
	// The stamps and CONTEXT fit the marks dump writes in them itself,
	// "(unreadable)" and a venue's "(pending)": cut, "(unread…" or
	// "(unrea…" was a word to guess.
	cols = append(cols, column{"PROMOTED", 20}, column{"PI-VERSION", markWidth}, column{"VENUE", markWidth}, column{"CHAIN", 0}, column{"CONTEXT", markWidth})
	if t.wide {
		cols = append(cols, column{"GEN", 0}, column{"META", 0})
	}
	return append(cols, column{"NOTE", 0})
}

// write writes the table, its ages judged at now: KEY and VERDICT
// first, cut to dumpWidth columns unless wide, where every column shows
// uncut. The rows are given up as they are handed over.
func (t *keyTable) write(w io.Writer, now time.Time) error {
	cells := make([][]string, len(t.rows))
	for i := range t.rows {
		r := &t.rows[i]
		for _, a := range r.ages {
			if a.cell > 0 {
				r.cells[a.cell] = ago(now, a.at) + a.suffix
			}
		}
		cells[i] = r.cells
	}
	t.rows = nil
	return writeDumpTable(w, t.titles(), cells, t.wide)
}

// writeDumpTable writes one of dump's tables: within dumpWidth columns,
// or with --wide every cell whole.
func writeDumpTable(w io.Writer, cols []column, cells [][]string, wide bool) error {
	limit := dumpWidth
	if wide {
		limit = 0
		for i := range cols {
			cols[i].max = 0
		}
	}
	return writeTable(w, cols, cells, limit)
}

// tableStampRunes is as much of a stamp as a row of the table (not
// --wide) is held with until the walk ends: more than its cell shows. A
// stamp is another binary's or a hand's as often as sessdb's, as large as
// etcd or a meta.db takes: 100 keys with a pi version of 1.4 MB, each held
// whole, made a dump of a fleet take 339 MB to show 12 characters of each.
const tableStampRunes = 4 * markWidth

// forTable is r as the table (not --wide) holds it: its stamps cut to
// their first tableStampRunes runes. Their cells are made printable rune
// by rune and cut to markWidth runes, so a stamp cut so makes the same
// cell.
func forTable(r store.KeyReport) store.KeyReport {
	r.PiVersion, r.Venue = shortStamp(r.PiVersion), shortStamp(r.Venue)
	return r
}

// shortStamp is p's first tableStampRunes runes (bytes that are not UTF-8
// one each, as printable reads them), in a string of their own: a slice
// of p would keep the whole of it.
func shortStamp(p *string) *string {
	if p == nil {
		return nil
	}
	i := 0
	for n := 0; i < len(*p) && n < tableStampRunes; n++ {
		_, size := utf8.DecodeRuneInString((*p)[i:])
		i += size
	}
	if i == len(*p) {
		return p
	}
	short := strings.Clone((*p)[:i])
	return &short
}

// historyRows is dump's history table as it is held until the walk ends:
// each entry's cells, made printable as its key is read, and the lines
// that follow the table, not the keys' reports.
type historyRows struct {
	wide  bool
	only  string // the key asked for by name (--key), or ""
	cells [][]string
	notes []string // the lines after the table, in key order
}

var historyCols = []column{{"KEY", 32}, {"GEN", 0}, {"AT", 0}, {"OUTCOME", 0}, {"RESOLVED", 0}, {"BYTES", 0}, {"CHAIN", 0}, {"BASE", 0}, {"RUN", 0}, {"FLAGS", 0}, {"JOB", 24}}

// add makes the rows of r's history entries, and its line after the
// table, if it has one.
func (t *historyRows) add(r store.KeyReport) {
	for _, h := range r.History {
		var flags []string
		if h.TornTail {
			flags = append(flags, "torn-tail")
		}
		if h.Rewritten {
			flags = append(flags, "rewritten")
		}
		base := "-"
		if h.BaseGen > 0 {
			base = strconv.FormatUint(h.BaseGen, 10)
		}
		row := []string{r.Name, strconv.FormatUint(h.Gen, 10), h.At.UTC().Format(time.RFC3339Nano), h.Outcome, h.Reason,
			strconv.FormatInt(h.Bytes, 10), strconv.FormatUint(h.Chain, 10), base, orDash(h.Run), orDash(strings.Join(flags, ",")), orDash(h.Job)}
		for i := range row {
			row[i] = printable(row[i])
		}
		t.cells = append(t.cells, row)
	}
	why := r.MetaError
	if why == "" && r.Name == t.only && len(r.History) == 0 {
		why = noHistory(r)
	}
	if why != "" {
		t.notes = append(t.notes, fmt.Sprintf("note %s: %s\n", printable(r.Name), printable(why)))
	}
}

// write writes each key's history entries, oldest first, one table
// for all keys; then, one line each, why a key's meta.db (a fleet's
// record or history) could not be read whole. The table has no NOTE
// column, and without the line a history entry that does not decode
// leaves the entries read (or none) looking like the whole history; the
// key table says it in NOTE, --json in meta_error.
//
// A key asked for by name (only, --key) whose history has no entry gets
// a line too, saying why (no key dir, a legacy key dir, ...): the header
// alone could not tell a key with no history from a key that is not
// there, where the key table gives it a row whose NOTE says which. A
// walk of the whole root lists the keys with entries, as the key table of
// an empty root is its header alone: a line for every legacy or
// just-migrated key would bury the entries asked for.
func (t *historyRows) write(w io.Writer) error {
	cols := slices.Clone(historyCols) // writeDumpTable widens them
	if err := writeDumpTable(w, cols, t.cells, t.wide); err != nil {
		return err
	}
	for _, n := range t.notes {
		if _, err := io.WriteString(w, n); err != nil {
			return err
		}
	}
	return nil
}

// noHistory says why a key's history table has no entry.
func noHistory(r store.KeyReport) string {
	switch {
	case r.Problem != "":
		return "no history entries (" + r.Problem + ")"
	case r.Layout == store.LayoutLegacy:
		return "no history entries (a legacy key dir keeps none)"
	case r.Layout == store.LayoutEmpty:
		return "no history entries (an empty key dir)"
	}
	return "no history entries"
}

// ageCell is the conversation's age's cell: why there is none, or, with
// at, the header's time whose age it is.
func ageCell(t *store.TranscriptReport) (string, *time.Time) {
	switch {
	case t == nil:
		return "-", nil
	case !t.Regular:
		return "not-a-regular-file", nil
	case !t.HeaderOK:
		return "unparseable", nil
	case t.HeaderTime == nil:
		return "no-timestamp", nil
	}
	return "", t.HeaderTime
}

// unreadableCell is a legacy sidecar there but unreadable, as the
// store's stamps show one.
const unreadableCell = "(unreadable)"

// markWidth is the widest mark dump writes in a stamp's or the context's
// cell: unreadableCell (a venue's "(pending)" is shorter).
const markWidth = len(unreadableCell)

// contextCell is the last reading: its percent of the window (what the
// context rung compares), and in the wide table tokens/window before it.
func contextCell(c *store.ContextReport, wide bool) string {
	if c == nil {
		return "-"
	}
	pct := "?"
	if c.Pct != nil {
		pct = fmt.Sprintf("%d%%", *c.Pct)
	}
	if wide {
		return fmt.Sprintf("%d/%d %s", c.Tokens, c.Window, pct)
	}
	return pct
}

// notes are what an operator should notice about a row.
func notes(r store.KeyReport) []string {
	var out []string
	for _, n := range []string{r.Problem, r.MetaError} {
		if n != "" {
			out = append(out, n)
		}
	}
	if p := r.Pending; p != nil {
		out = append(out, fmt.Sprintf("pending gen %d at %s", p.Gen, p.Tmp))
	}
	if c := r.Context; c != nil && c.OverWindow {
		out = append(out, "context over its window")
	}
	if m := r.MetaPages; m != nil && m.Fallback {
		out = append(out, "one meta page invalid: run sessdb check")
	}
	if v := r.Verify; v != nil && v.Detail != "" {
		out = append(out, "verify: "+v.Detail)
	}
	if len(r.LegacyFiles) > 0 && r.Layout != store.LayoutLegacy {
		out = append(out, "legacy files: "+strings.Join(r.LegacyFiles, ","))
	}
	return out
}

// metaCell shows both meta pages as "txid,txid high-water/size": "*" marks
// the page bbolt uses and "!" a page it would refuse, so "7*,0!" is a file
// running on one page and "?" a file with no meta page to show.
func metaCell(m *store.MetaPagesReport) string {
	if m == nil {
		return "-"
	}
	pages := "?"
	if len(m.Pages) == 2 {
		var b strings.Builder
		for i, p := range m.Pages {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(p.Txid, 10))
			switch {
			case i == m.Active:
				b.WriteByte('*')
			case !p.Valid:
				b.WriteByte('!')
			}
		}
		pages = b.String()
	}
	hw := "-"
	if m.Active >= 0 {
		hw = strconv.FormatInt(m.HighWater, 10)
	}
	return fmt.Sprintf("%s %s/%d", pages, hw, m.Bytes)
}

func verifyCell(v *store.VerifyReport) string {
	if v == nil {
		return "-"
	}
	return v.Result
}

// verdictCell is the reason, or "?/R" for a verdict that depends on the job:
// R is what a job matching the key's stamps would get.
func verdictCell(v *store.VerdictReport) string {
	switch {
	case v == nil:
		return "-"
	case v.Reason == store.Undetermined:
		return store.Undetermined + "/" + v.IfMatched
	}
	return v.Reason
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quoted shows an absent value as "-" and a present one as written, so an
// empty pi-version stamp ("unknown") is told from a missing one.
func quoted(p *string) string {
	switch {
	case p == nil:
		return "-"
	case *p == "":
		return `""`
	}
	return *p
}

// ago renders a past instant as a short age ("3d", "12m"). A future one is
// "ahead", with no size: it is a clock that is off (another host's, a
// checkout's mtime judged --at an earlier time), and its size would only
// say when the file was written. An age past 292 years (--at 9999-12-31,
// a header dated year 1, an mtime at an end of 64 bits) is counted in days
// all the same, and its direction judged by the seconds (store.RoundAge,
// store.Ahead).
func ago(now, t time.Time) string {
	if store.Ahead(now, t) {
		return "ahead"
	}
	return store.RoundAge(now, t) + " ago"
}
