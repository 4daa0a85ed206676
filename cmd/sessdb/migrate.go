package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"sessdb/migrate"
)

var cmdMigrate = &command{
	name:  "migrate",
	usage: "migrate [--to-legacy] [--dry-run] [--json] [--workers N] DIR",
	short: "move every legacy key dir of DIR into meta.db, or back with --to-legacy (docs/MIGRATION.md); safe to interrupt and to re-run",
	run:   runMigrate,
}

// migrateWorkers overlaps the fsyncs of a few keys; more adds little on
// one disk (measured: docs/MIGRATION.md).
const migrateWorkers = 4

// Exit statuses of migrate: exitOK when every key was migrated or already
// was, exitIssues when a key was locked or failed (the report names each;
// a re-run finishes them), exitFault when the run itself could not go on.
func runMigrate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("migrate", stderr)
	toLegacy := fs.Bool("to-legacy", false, "write the legacy files back from meta.db and remove it (the rollback)")
	dryRun := fs.Bool("dry-run", false, "print the plan, every odd legacy value and how it will be read; change nothing")
	asJSON := fs.Bool("json", false, "one JSON object per entry of DIR, then a summary object")
	workers := fs.String("workers", fmt.Sprint(migrateWorkers), "keys migrated at once, 1..64")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		return usageError(stderr, "migrate", fmt.Errorf("want exactly one DIR (the sessions root), got %d arguments", fs.NArg()))
	}
	if err := checkWalkRoot(fs.Arg(0)); err != nil {
		return usageError(stderr, "migrate", err)
	}
	n, err := parseUint("--workers", *workers, 64)
	if err == nil && n == 0 {
		err = fmt.Errorf("--workers: %s is out of range (want 1..64)", brief(*workers))
	}
	if err != nil {
		return usageError(stderr, "migrate", err)
	}
	opts := migrate.Options{DryRun: *dryRun, Workers: int(n)}
	if isTerminal(stderr) {
		opts.Progress = migrateProgress(stderr)
	}

	w := bufio.NewWriter(stdout)
	visit := migrateText(w)
	if *asJSON {
		enc := json.NewEncoder(w)
		visit = func(r migrate.Report) error { return enc.Encode(r) }
	} else if *dryRun {
		fmt.Fprintln(w, "dry run: nothing is changed; each line says what a run would do")
	}
	each := func(r migrate.Report) error {
		if err := visit(r); err != nil {
			return err
		}
		return w.Flush() // a long run shows its reports as they come
	}
	run := migrate.ToDB
	if *toLegacy {
		run = migrate.ToLegacy
	}
	sum, err := run(fs.Arg(0), opts, each)
	if err == nil {
		if *asJSON {
			err = json.NewEncoder(w).Encode(struct {
				Summary migrate.Summary `json:"summary"`
			}{sum})
		} else {
			migrateSummary(w, sum)
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "sessdb migrate: %v\n", err)
		return exitFault
	}
	if !sum.Complete() {
		return exitIssues
	}
	return exitOK
}

// migrateText writes one line per entry, then one indented line per
// oddity: what was found and how it is read.
func migrateText(w io.Writer) func(migrate.Report) error {
	return func(r migrate.Report) error {
		var parts []string
		if r.Values != nil {
			parts = append(parts, migrateValues(*r.Values))
		}
		if len(r.Written) > 0 {
			parts = append(parts, "writes "+strings.Join(r.Written, " "))
		}
		if len(r.Removed) > 0 {
			parts = append(parts, "removes "+strings.Join(r.Removed, " "))
		}
		if r.Cause != "" {
			parts = append(parts, r.Cause)
		}
		line := fmt.Sprintf("%-32s  %-7s  %s", r.Key, r.Action, strings.Join(parts, "; "))
		_, err := fmt.Fprintln(w, strings.TrimRight(line, " "))
		for _, o := range r.Oddities {
			if err == nil {
				_, err = fmt.Fprintf(w, "    %s: %s -> %s\n", o.File, o.Found, o.ReadAs)
			}
		}
		return err
	}
}

// migrateValues is the one-line form of what a key holds.
func migrateValues(v migrate.Values) string {
	var b strings.Builder
	if t := v.Transcript; t != nil {
		fmt.Fprintf(&b, "transcript %d B crc32c %08x promoted %s", t.Size, t.CRC32C, t.PromotedAt.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("no transcript")
	}
	venue := "(absent: local)"
	if v.Venue != nil {
		venue = fmt.Sprintf("%q", *v.Venue)
	}
	fmt.Fprintf(&b, ", venue %s, pi-version %q", venue, v.PiVersion)
	if v.ResumeChain != nil {
		fmt.Fprintf(&b, ", chain %d", *v.ResumeChain)
	}
	if c := v.Context; c != nil {
		fmt.Fprintf(&b, ", context %d/%d", c.Tokens, c.Window)
		if c.Model != "" {
			b.WriteString(" " + c.Model)
		}
	}
	return b.String()
}

func migrateSummary(w io.Writer, s migrate.Summary) {
	verb := "ran"
	if s.DryRun {
		verb = "would run"
	}
	fmt.Fprintf(w, "%s %s over %d entries in %.1fs: %d migrate, %d already, %d skip, %d locked, %d failed\n",
		verb, s.Direction, s.Entries, s.Seconds, s.Migrated, s.Already, s.Skipped, s.Locked, s.Failed)
	if !s.Complete() {
		fmt.Fprintln(w, "some keys were not converted (see locked and failed above): fix the cause and run again; a re-run finishes them and leaves the rest as they are")
	}
}

// migrateProgress rewrites one status line on a terminal, at most ten times a
// second, and ends it when the run is done.
func migrateProgress(w io.Writer) func(done, total int) {
	var last time.Time
	return func(done, total int) {
		if done < total && time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\rmigrate: %d/%d", done, total)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}
