package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

var cmdDump = &command{
	name:  "dump",
	usage: "dump [--json] [--key KEY] [--verify] [--history N] [--as-job --pi-version V --venue NAME [--model M]] [DIR]",
	short: "list every key dir of a sessions root with the verdict a resolve would get now (read-only)",
	run:   runDump,
}

const dumpExample = `  sessdb dump /var/lib/pi/sessions
  sessdb dump --key 4668107cac2e99b44415c5606b32ef14 --history 10 --as-job --pi-version 0.58.3 --venue local /var/lib/pi/sessions
  sessdb dump --json --verify /var/lib/pi/sessions | jq -c 'select(.verify.result != "ok")'`

func runDump(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dump", stderr)
	setUsage(fs, "dump", dumpExample)
	cfg := bindConfig(fs)
	asJSON := fs.Bool("json", false, "one JSON object per entry, one per line (fields: docs/OPERATIONS.md)")
	key := fs.String("key", "", "show only this key")
	verify := fs.Bool("verify", false, "read each transcript whole and check its size and CRC32C against its record")
	history := fs.String("history", "3", "how many of each key's last history entries to show")
	asJob := fs.Bool("as-job", false, "judge the verdict for the job that --pi-version, --venue and --model describe; without it, a verdict that depends on the job shows as ?")
	piVersion := fs.String("pi-version", "", "with --as-job: the pi version the job's image declares")
	venue := fs.String("venue", "", "with --as-job: the backend the job runs on")
	model := fs.String("model", "", "with --as-job: the job's provider/model id (for the context bound)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return usageError(stderr, "dump", fmt.Errorf("unexpected argument %s", brief(fs.Arg(1))))
	}
	n, err := parseUint("--history", *history, store.HistoryLimitForDump)
	if err != nil {
		return usageError(stderr, "dump", err)
	}
	if *key != "" && !store.ValidKey(*key) {
		return usageError(stderr, "dump", fmt.Errorf("--key: %s: %w", brief(*key), store.ErrInvalidKey))
	}
	var job *store.Job
	switch {
	case *asJob && (!flagGiven(fs, "pi-version") || !flagGiven(fs, "venue")):
		return usageError(stderr, "dump", errors.New("--as-job needs --pi-version and --venue"))
	case *asJob:
		job = &store.Job{PiVersion: *piVersion, Venue: *venue, Model: *model}
	case flagGiven(fs, "pi-version") || flagGiven(fs, "venue") || flagGiven(fs, "model"):
		return usageError(stderr, "dump", errors.New("--pi-version, --venue and --model describe a job: use them with --as-job"))
	}
	st, _, code := openStore(cfg, "dump", fs.Arg(0), stderr)
	if st == nil {
		return code
	}
	if err := checkWalkRoot(st.Root()); err != nil {
		return usageError(stderr, "dump", err)
	}

	ctx, stop := interruptContext()
	defer stop()
	prog := progressTo(stderr, "dump")
	w := bufio.NewWriter(clearing(stdout, prog))
	var row func(store.KeyReport) error
	finish := func() error { return nil }
	if *asJSON {
		enc := json.NewEncoder(w)
		row = func(r store.KeyReport) error { return enc.Encode(r) }
	} else {
		row, finish = dumpTable(w, clock(), *verify)
	}
	done := 0
	opts := store.InspectOptions{History: int(n), Only: *key, Verify: *verify, Job: job, Progress: prog.report()}
	err = st.InspectWith(ctx, opts, func(r store.KeyReport) error { done++; return row(r) })
	prog.clear()
	if ferr := finish(); err == nil {
		err = ferr
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return walkEnd(stderr, "dump", err, done)
}

// dumpTable writes one row per entry, then each key's history. The table
// is aligned, so it is written when finish is called.
func dumpTable(w io.Writer, now time.Time, verify bool) (func(store.KeyReport) error, func() error) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := []string{"KEY", "LAYOUT", "BYTES", "AGE", "PROMOTED", "PI-VERSION", "VENUE", "CHAIN", "CONTEXT", "GEN", "META"}
	if verify {
		cols = append(cols, "VERIFY")
	}
	fmt.Fprintln(tw, strings.Join(append(cols, "VERDICT", "NOTE"), "\t"))
	var histories []string
	row := func(r store.KeyReport) error {
		cells := []string{r.Name, orDash(string(r.Layout)), "-", "-", "-", quoted(r.PiVersion), quoted(r.Venue), "-", "-", "-", metaCell(r.MetaPages)}
		if t := r.Transcript; t != nil {
			cells[2] = strconv.FormatInt(t.Bytes, 10)
			switch {
			case !t.Regular:
				cells[3] = "not-a-regular-file"
			case !t.HeaderOK:
				cells[3] = "unparseable"
			case t.HeaderTime == nil:
				cells[3] = "no-timestamp"
			default:
				cells[3] = ago(now, *t.HeaderTime)
			}
		}
		if r.LastPromotion != nil {
			cells[4] = ago(now, *r.LastPromotion)
		} else if r.Transcript != nil {
			cells[4] = ago(now, r.Transcript.ModTime) + " (mtime)"
		}
		if r.ResumeChain != nil {
			cells[7] = strconv.FormatUint(*r.ResumeChain, 10)
		}
		if c := r.Context; c != nil {
			cells[8] = fmt.Sprintf("%d/%d", c.Tokens, c.Window)
			if c.Pct != nil {
				cells[8] += fmt.Sprintf(" %d%%", *c.Pct)
			}
		}
		if r.Gen > 0 {
			cells[9] = strconv.FormatUint(r.Gen, 10)
		}
		if verify {
			cells = append(cells, verifyCell(r.Verify))
		}
		cells = append(cells, verdictCell(r.Verdict), orDash(strings.Join(notes(r), "; ")))
		for i := range cells {
			cells[i] = printable(cells[i]) // names, stamps and errors come from the disk
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		for _, h := range r.History {
			histories = append(histories, "  "+printable(r.Name)+"  "+printable(historyLine(h)))
		}
		return nil
	}
	finish := func() error {
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(histories) > 0 {
			_, err := fmt.Fprintf(w, "\nhistory (newest last):\n%s\n", strings.Join(histories, "\n"))
			return err
		}
		return nil
	}
	return row, finish
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

// historyLine is one history entry as the table shows it: a promotion
// with how its job started, its size, chain, run and job; a refusal with
// the generation the job was based on.
func historyLine(h store.HistoryReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gen %d  %s  ", h.Gen, h.At.Format(time.RFC3339))
	if h.Outcome != string(gates.Promoted) {
		fmt.Fprintf(&b, "refused: %s  base gen %d", h.Outcome, h.BaseGen)
	} else {
		how := "cold: " + h.Reason
		if h.Resumed {
			how = "resumed"
		}
		fmt.Fprintf(&b, "%s  %d bytes  chain %d", how, h.Bytes, h.Chain)
	}
	if h.Run != "" {
		b.WriteString("  run " + h.Run)
	}
	if h.Job != "" {
		b.WriteString("  job " + h.Job)
	}
	if h.TornTail {
		b.WriteString("  torn-tail")
	}
	if h.Rewritten {
		b.WriteString("  rewritten")
	}
	return b.String()
}
