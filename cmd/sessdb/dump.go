package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

var cmdDump = &command{
	name:  "dump",
	usage: "dump [--json] [--wide] [--key KEY] [--verify] [--history N] [--as-job --pi-version V --venue NAME [--model M]] [DIR]",
	short: "list every key dir of a sessions root with the verdict a resolve would get now (read-only)",
	long: `
One row per entry under the sessions root (DIR, else --sessions-dir or
PI_SESSIONS_DIR), in name order: KEY and VERDICT first, then the layout, the
transcript's size, the time since its last promotion, the stamps, the chain,
the context reading and a NOTE of what needs attention. The table fits 160
columns (a cell too wide is cut with …); --wide shows every column
(conversation age, generation, meta pages) uncut, and --json one object per
entry and a summary (docs/json.md).

A verdict that depends on the job (its venue, pi version, model) shows as ?/R:
R is what a job matching the key's stamps would get. --as-job with
--pi-version and --venue judges it for that job, rung for rung. --verify reads
each transcript (at most its record's size plus one byte) and checks its size
and CRC32C. --history N prints, instead of the key table, a table of each
key's last N history entries (with --json, each object carries them).

dump changes nothing: not a byte, not an mtime. A key that cannot be read
(an I/O error, its lock not had in time) is named on stderr, and dump exits 1
after listing the others.`,
	example: `  sessdb dump /var/lib/pi/sessions
  sessdb dump /var/lib/pi/sessions --key 4668107cac2e99b44415c5606b32ef14 --history 10
  sessdb dump --as-job --pi-version 0.58.3 --venue local /var/lib/pi/sessions
  sessdb dump --json --verify /var/lib/pi/sessions | jq -c 'select(.verify and .verify.result != "ok")'`,
	exits:   []int{exitOK, exitFault, exitUsage, exitInterrupted},
	maxArgs: 1,
	bind:    bindDump,
}

// dumpWidth is the widest line of dump's tables without --wide.
const dumpWidth = 160

// dumpSummary ends dump --json.
type dumpSummary struct {
	Entries     int  `json:"entries"`     // objects printed
	Keys        int  `json:"keys"`        // of which named as keys
	Failed      int  `json:"failed"`      // keys that could not be read (exit 1)
	Interrupted bool `json:"interrupted"` // Ctrl-C or SIGTERM stopped the walk
}

func bindDump(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per entry, then a summary object (docs/json.md)")
	wide := fs.Bool("wide", false, "show every column, uncut")
	key := fs.String("key", "", "show only this `KEY`")
	verify := fs.Bool("verify", false, "read each transcript and check its size and CRC32C against its record")
	history := fs.String("history", "0", "print each key's last `N` history entries (at most 64) as a table of their own instead of the key table; with --json, in each object")
	asJob := fs.Bool("as-job", false, "judge the verdict for the job that --pi-version, --venue and --model describe; without it, a verdict that depends on the job shows as ?")
	piVersion := fs.String("pi-version", "", "with --as-job: the pi `VERSION` the job's image declares")
	venue := fs.String("venue", "", "with --as-job: the backend, `NAME`, the job runs on")
	model := fs.String("model", "", "with --as-job: the job's `PROVIDER/ID` (for the context bound)")
	return func(inv *invocation) int {
		n, err := parseUint("--history", *history, store.HistoryLimitForDump)
		if err != nil {
			return inv.rep.usage(err)
		}
		if *key != "" && !store.ValidKey(*key) {
			return inv.rep.usage(fmt.Errorf("--key: %s: %w", brief(*key), store.ErrInvalidKey))
		}
		var job *store.Job
		switch {
		case *asJob && (!inv.given("pi-version") || !inv.given("venue")):
			return inv.rep.usage(errors.New("--as-job needs --pi-version and --venue"))
		case *asJob:
			job = &store.Job{PiVersion: *piVersion, Venue: *venue, Model: *model}
		case inv.given("pi-version") || inv.given("venue") || inv.given("model"):
			return inv.rep.usage(errors.New("--pi-version, --venue and --model describe a job: use them with --as-job"))
		}
		st, code := openWalk(inv, cfg)
		if st == nil {
			return code
		}

		ctx, stop := interruptContext()
		defer stop()
		prog := progressTo(inv, "dump")
		w := bufio.NewWriter(clearing(inv.stdout, prog))
		var sum dumpSummary
		var rows []store.KeyReport // for a table: widths need every row
		jw := &jsonWriter{w: w}
		opts := store.InspectOptions{History: int(n), Only: *key, Verify: *verify, Job: job, Progress: prog.report()}
		err = st.InspectWith(ctx, opts, func(r store.KeyReport) error {
			sum.Entries++
			if store.ValidKey(r.Name) {
				sum.Keys++
			}
			if why := dumpFault(r); why != "" {
				sum.Failed++
				prog.clear()
				inv.rep.keyFault(r.Name, why)
			}
			if *asJSON {
				return jw.encode(r)
			}
			rows = append(rows, r)
			return nil
		})
		prog.clear()
		sum.Interrupted = errors.Is(err, context.Canceled)
		if err != nil && !sum.Interrupted {
			return inv.rep.fault(err) // nothing is printed: no header, no summary
		}
		switch {
		case *asJSON:
			jw.encode(summaryLine[dumpSummary]{sum})
			err = jw.err
		case n > 0:
			err = historyTable(w, rows, *wide)
		default:
			err = dumpTable(w, rows, clock(), *verify, *wide)
		}
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		switch {
		case err != nil:
			return inv.rep.fault(fmt.Errorf("write: %w", err))
		case sum.Interrupted:
			return inv.rep.interrupted(sum.Entries)
		case sum.Failed > 0:
			return exitFault
		}
		return exitOK
	}
}

// dumpFault says why dump could not read a key, or "" when it could. A
// name that is not a key, a key with no dir, a key that is not a real
// directory and a damaged meta.db are what they are, reported in the row:
// dump read them. An I/O error, a lock not had in time, a transcript
// --verify could not read are faults.
func dumpFault(r store.KeyReport) string {
	switch {
	case !store.ValidKey(r.Name):
		return ""
	case r.Verdict == nil && r.Problem != "":
		return r.Problem
	case r.Verdict != nil && r.Verdict.Reason == string(gates.Locked):
		return r.Problem
	case r.Verify != nil && r.Verify.Result == store.VerifyUnreadable:
		return "verify: " + r.Verify.Detail
	}
	return ""
}

// dumpTable writes the key table: KEY and VERDICT first, cut to
// dumpWidth columns unless wide, where every column shows uncut.
func dumpTable(w io.Writer, rows []store.KeyReport, now time.Time, verify, wide bool) error {
	cols := []column{{"KEY", 32}, {"VERDICT", 23}}
	if verify {
		cols = append(cols, column{"VERIFY", 13})
	}
	// Numbers are never cut: BYTES and CHAIN have no max.
	cols = append(cols, column{"LAYOUT", 6}, column{"BYTES", 0})
	if wide {
		cols = append(cols, column{"AGE", 0})
	}
	cols = append(cols, column{"PROMOTED", 15}, column{"PI-VERSION", 10}, column{"VENUE", 8}, column{"CHAIN", 0}, column{"CONTEXT", 5})
	if wide {
		cols = append(cols, column{"GEN", 0}, column{"META", 0})
	}
	cols = append(cols, column{"NOTE", 0})
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		row := []string{r.Name, verdictCell(r.Verdict)}
		if verify {
			row = append(row, verifyCell(r.Verify))
		}
		row = append(row, orDash(string(r.Layout)), "-")
		if t := r.Transcript; t != nil {
			row[len(row)-1] = strconv.FormatInt(t.Bytes, 10)
		}
		if wide {
			row = append(row, ageCell(r.Transcript, now))
		}
		promoted := "-"
		if r.LastPromotion != nil {
			promoted = ago(now, *r.LastPromotion)
		} else if r.Transcript != nil {
			promoted = ago(now, r.Transcript.ModTime) + " (mtime)"
		}
		chain := "-"
		if r.ResumeChain != nil {
			chain = strconv.FormatUint(*r.ResumeChain, 10)
		}
		row = append(row, promoted, quoted(r.PiVersion), quoted(r.Venue), chain, contextCell(r.Context, wide))
		if wide {
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
		cells = append(cells, row)
	}
	limit := dumpWidth
	if wide {
		limit = 0
		for i := range cols {
			cols[i].max = 0
		}
	}
	return writeTable(w, cols, cells, limit)
}

// historyTable writes each key's history entries, oldest first, one table
// for all keys.
func historyTable(w io.Writer, rows []store.KeyReport, wide bool) error {
	cols := []column{{"KEY", 32}, {"GEN", 0}, {"AT", 0}, {"OUTCOME", 0}, {"RESOLVED", 0}, {"BYTES", 0}, {"CHAIN", 0}, {"BASE", 0}, {"RUN", 0}, {"FLAGS", 0}, {"JOB", 24}}
	var cells [][]string
	for _, r := range rows {
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
			cells = append(cells, row)
		}
	}
	limit := dumpWidth
	if wide {
		limit = 0
		for i := range cols {
			cols[i].max = 0
		}
	}
	return writeTable(w, cols, cells, limit)
}

// ageCell is the conversation's age from its header timestamp, or why
// there is none.
func ageCell(t *store.TranscriptReport, now time.Time) string {
	switch {
	case t == nil:
		return "-"
	case !t.Regular:
		return "not-a-regular-file"
	case !t.HeaderOK:
		return "unparseable"
	case t.HeaderTime == nil:
		return "no-timestamp"
	}
	return ago(now, *t.HeaderTime)
}

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

// ago renders a past instant as a short age ("3d", "12m"); a future one is
// shown as such.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " ahead"
	}
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%s", int(d/(24*time.Hour)), suffix)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%s", int(d/time.Hour), suffix)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%s", int(d/time.Minute), suffix)
	}
	return fmt.Sprintf("%ds%s", int(d/time.Second), suffix)
}
