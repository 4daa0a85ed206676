package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sessdb/store"
)

var cmdDump = &command{
	name:  "dump",
	usage: "dump [--json] [--history N] [DIR]",
	short: "list every key dir of a sessions root: layout, transcript, sidecars, history (read-only)",
	run:   runDump,
}

func runDump(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dump", stderr)
	cfg := bindConfig(fs)
	asJSON := fs.Bool("json", false, "one JSON object per key dir, one per line")
	history := fs.String("history", "3", "how many of each key's last history entries to show")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 1 {
		return usageError(stderr, "dump", fmt.Errorf("unexpected argument %q", fs.Arg(1)))
	}
	n, err := parseUint("--history", *history, store.HistoryLimitForDump)
	if err != nil {
		return usageError(stderr, "dump", err)
	}
	st, _, code := openStore(cfg, "dump", fs.Arg(0), stderr)
	if st == nil {
		return code
	}
	w := bufio.NewWriter(stdout)
	var visit func(store.KeyReport) error
	var finish func() error
	if *asJSON {
		enc := json.NewEncoder(w)
		visit = func(r store.KeyReport) error { return enc.Encode(r) }
		finish = func() error { return nil }
	} else {
		visit, finish = dumpTable(w, time.Now())
	}
	err = st.Inspect(int(n), visit)
	if err == nil {
		err = finish()
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "sessdb dump: %v\n", err)
		return exitFault
	}
	return exitOK
}

// dumpTable writes one row per key dir, then each key's history.
func dumpTable(w io.Writer, now time.Time) (func(store.KeyReport) error, func() error) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tLAYOUT\tBYTES\tHEADER\tPROMOTED\tGEN\tPI-VERSION\tVENUE\tCHAIN\tCONTEXT\tNOTE")
	var histories []string
	visit := func(r store.KeyReport) error {
		bytes, header := "-", "-"
		if t := r.Transcript; t != nil {
			bytes = strconv.FormatInt(t.Bytes, 10)
			switch {
			case !t.Regular:
				header = "not-a-regular-file"
			case t.HeaderOK:
				header = fmt.Sprintf("v%d %s", t.HeaderVersion, orDash(t.HeaderTimestamp))
			case t.Bytes > 0:
				header = "unparseable"
			}
		}
		promoted := "-"
		if r.LastPromotion != nil {
			promoted = ago(now, *r.LastPromotion)
		} else if r.Transcript != nil {
			promoted = ago(now, r.Transcript.ModTime) + " (mtime)"
		}
		gen := "-"
		if r.Gen > 0 {
			gen = strconv.FormatUint(r.Gen, 10)
		}
		chain := "-"
		if r.ResumeChain != nil {
			chain = strconv.FormatUint(*r.ResumeChain, 10)
		}
		ctx := "-"
		if c := r.Context; c != nil {
			ctx = fmt.Sprintf("%d/%d %.0f%%", c.Tokens, c.Window, float64(c.Tokens)*100/float64(c.Window))
			if c.Model != "" {
				ctx += " " + c.Model
			}
		}
		var notes []string
		for _, n := range []string{r.Problem, r.MetaError} {
			if n != "" {
				notes = append(notes, n)
			}
		}
		if r.Pending != nil {
			notes = append(notes, fmt.Sprintf("pending gen %d at %s", r.Pending.Gen, r.Pending.Tmp))
		}
		if len(r.LegacyFiles) > 0 && r.Layout != store.LayoutLegacy {
			notes = append(notes, "legacy files: "+strings.Join(r.LegacyFiles, ","))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, orDash(string(r.Layout)), bytes, header,
			promoted, gen, quoted(r.PiVersion), quoted(r.Venue), chain, ctx, orDash(strings.Join(notes, "; ")))
		for _, h := range r.History {
			how := "cold: " + h.Reason
			if h.Resumed {
				how = "resumed"
			}
			torn := ""
			if h.TornTail {
				torn = " torn-tail"
			}
			histories = append(histories, fmt.Sprintf("  %s  gen %d  %s  %s  %d bytes  chain %d%s",
				r.Name, h.Gen, h.At.Format(time.RFC3339), how, h.Bytes, h.Chain, torn))
		}
		return nil
	}
	finish := func() error {
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(histories) > 0 {
			fmt.Fprintf(w, "\nhistory (newest last):\n%s\n", strings.Join(histories, "\n"))
		}
		return nil
	}
	return visit, finish
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

// ago renders a past instant as a short age ("3d4h", "12m"); a future one
// is shown as such.
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
