package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"sessdb/fleet"
	"sessdb/gates"
	"sessdb/store"
)

var cmdDump = &command{
	name:  "dump",
	usage: "dump [--json | --wide] [--key KEY] [--verify] [--history N] [--as-job --pi-version V --venue NAME [--model M]] [--at TIME] [DIR | --etcd-endpoints URLS --transcripts-dir DIR]",
	short: "list every key of a sessions root or a fleet with the verdict a resolve would get now (read-only)",
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
what a resolve would copy (at most the size it could match plus one byte: a
promotion's temp not yet renamed into place, and the transcript in place where
a resolve falls back to it) and checks its size and CRC32C. --history N
prints, instead of the key table, a table of each key's last N history
entries (with --json, each object carries them).

dump changes nothing: not a byte, not an mtime. A key that cannot be read
(an I/O error, its lock not had in time) is named on stderr, and dump exits 1
after listing the others.

On a fleet (--etcd-endpoints, docs/fleet.md) dump lists every record in etcd,
one snapshot, in key order, with the same columns and objects: LAYOUT is
etcd, the fields only a key dir has are empty (null), and --json's file
names the generation file the record names. --verify reads that file.`,
	example: `  sessdb dump /var/lib/pi/sessions
  sessdb dump /var/lib/pi/sessions --key 4668107cac2e99b44415c5606b32ef14 --history 10
  sessdb dump --as-job --pi-version 0.58.3 --venue local /var/lib/pi/sessions
  sessdb dump --json --verify /var/lib/pi/sessions | jq -c 'select(.verify and .verify.result != "ok")'
  sessdb dump --etcd-endpoints http://127.0.0.1:2379 --transcripts-dir /srv/pi/transcripts --verify`,
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
	Interrupted bool `json:"interrupted"` // Ctrl-C, SIGTERM or SIGHUP stopped the walk
}

func bindDump(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per entry, then a summary object (docs/json.md)")
	wide := fs.Bool("wide", false, "show every column of the table, uncut (not with --json, whose objects hold every field)")
	key := fs.String("key", "", "show only this `KEY`")
	verify := fs.Bool("verify", false, "read what a resolve would copy and check its size and CRC32C")
	history := fs.String("history", "0", "print each key's last `N` history entries (at most 64) as a table of their own instead of the key table; with --json, in each object")
	asJob := fs.Bool("as-job", false, "judge the verdict for the job that --pi-version, --venue and --model describe; without it, a verdict that depends on the job shows as ?")
	piVersion := fs.String("pi-version", "", "with --as-job: the pi `VERSION` the job's image declares (trimmed, as resolve's)")
	venue := fs.String("venue", "", "with --as-job: the backend, `NAME`, the job runs on (\"\" = unknown: never resumes; trimmed, as resolve's)")
	model := fs.String("model", "", "with --as-job: the job's `PROVIDER/ID` (for the context bound; trimmed, as resolve's)")
	at := bindAt(fs)
	return func(inv *invocation) int {
		now, atOpt, err := at.now()
		if err != nil {
			return inv.rep.usage(err)
		}
		if *asJSON && *wide {
			// --wide shapes the table, which --json replaces: taken
			// together, one of the two was asked for in vain, as stats's
			// --json and --prometheus would be.
			return inv.rep.usage(errors.New("--json and --wide: choose one (--wide widens the table; --json's objects hold every field uncut)"))
		}
		n, err := parseUint("--history", *history, store.HistoryLimitForDump)
		if err != nil {
			return inv.rep.usage(err)
		}
		if inv.given("key") && !store.ValidKey(*key) {
			return inv.rep.usage(fmt.Errorf("--key: %s: %w", brief(*key), store.ErrInvalidKey))
		}
		var job *store.Job
		switch {
		case *asJob && (!inv.given("pi-version") || !inv.given("venue")):
			return inv.rep.usage(errors.New("--as-job needs --pi-version and --venue"))
		case *asJob:
			if err := utf8Flags(inv.fs, "pi-version", "venue"); err != nil {
				return inv.rep.usage(err) // no job could be given them: see resolve
			}
			trimStamps(piVersion, venue, model)
			if err := valueLengths(inv.fs, "pi-version", "venue", "model"); err != nil {
				return inv.rep.usage(err) // as resolve would refuse it
			}
			job = &store.Job{PiVersion: *piVersion, Venue: *venue, Model: *model}
		case inv.given("pi-version") || inv.given("venue") || inv.given("model"):
			return inv.rep.usage(errors.New("--pi-version, --venue and --model describe a job: use them with --as-job"))
		}
		fc, onFleet, code := fleetOf(inv, cfg, fk, inv.arg(0))
		if code != exitOK {
			return code
		}
		prog := progressTo(inv, "dump")
		opts := store.InspectOptions{History: int(n), Only: *key, Verify: *verify, Job: job, Progress: prog.report()}
		// Signals are caught from before a fleet's connection, which can
		// wait up to its request timeout (openFleetWalk).
		ctx, stop := interruptContext()
		defer stop()
		// inspect walks the store, a sessions root or a fleet, and
		// visits each entry with the file a fleet's record names.
		var inspect func(context.Context, func(store.KeyReport, string) error) error
		if onFleet {
			sopts, err := storeOptions(cfg, inv, atOpt)
			if err != nil {
				return inv.rep.config(err)
			}
			b, stopped, code := openFleetWalk(ctx, inv, fk, fc)
			switch {
			case stopped:
				// A signal while it connected: nothing read.
				inspect = func(ctx context.Context, _ func(store.KeyReport, string) error) error { return ctx.Err() }
			case b == nil:
				return code
			default:
				defer b.Close()
				fopts := fleet.InspectOptions{Bounds: sopts.Bounds, Now: sopts.Now, History: opts.History, Only: opts.Only, Verify: opts.Verify, Job: opts.Job, Progress: opts.Progress}
				inspect = func(ctx context.Context, visit func(store.KeyReport, string) error) error {
					return b.Inspect(ctx, fopts, func(r fleet.Report) error { return visit(r.KeyReport, r.File) })
				}
			}
		} else {
			st, code := openWalk(inv, cfg, atOpt)
			if st == nil {
				return code
			}
			inspect = func(ctx context.Context, visit func(store.KeyReport, string) error) error {
				return st.InspectWith(ctx, opts, func(r store.KeyReport) error { return visit(r, "") })
			}
		}

		w := bufio.NewWriter(clearing(inv.stdout, prog))
		var sum dumpSummary
		// For a table: widths need every row.
		keys := keyTable{verify: *verify, wide: *wide}
		entries := historyRows{wide: *wide, only: *key}
		// The JSON lines are held until the walk has ended, as a table's
		// rows are: a walk can fail half-way (a fleet's etcd lost while
		// its histories are read), and a failed command prints nothing,
		// where a buffer flushed on the way would leave a stream without
		// its summary. Held in a spool: a table's rows are cut short,
		// the JSON lines are whole.
		held := newSpool()
		defer held.Close()
		jw := &jsonWriter{w: held}
		err = inspect(ctx, func(r store.KeyReport, file string) error {
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
				return jw.encode(dumpEntry{r, file})
			}
			if !*wide {
				r = forTable(r)
			}
			if n > 0 {
				entries.add(r)
			} else {
				keys.add(r)
			}
			return nil
		})
		if dumpWalked != nil {
			dumpWalked()
		}
		prog.clear()
		sum.Interrupted = errors.Is(err, context.Canceled)
		if err != nil && !sum.Interrupted {
			return inv.rep.fault(err) // nothing is printed: no header, no summary
		}
		switch {
		case *asJSON:
			jw.encode(summaryLine[dumpSummary]{sum})
			if err = jw.err; err == nil {
				_, err = held.WriteTo(w)
			}
		case n > 0:
			err = entries.write(w)
		default:
			err = keys.write(w, now())
		}
		if err == nil && sum.Interrupted && !*asJSON {
			// A table has no summary line to carry the mark: a line of
			// its own after it, as stats writes one.
			_, err = fmt.Fprintf(w, "(interrupted after %s; the table covers those)\n", plural(sum.Entries, "entry"))
		}
		status := exitOK
		if sum.Failed > 0 {
			status = exitFault
		}
		return inv.endWalk(w, err, sum.Interrupted, sum.Entries, status)
	}
}

// dumpWalked, when set (tests), is called once dump's walk has ended,
// before anything is written: what the command holds then is what it
// held for every key until the end.
var dumpWalked func()

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

// dumpEntry is dump --json's entry object: the key's report (docs/json.md,
// dump.entry) and file, the generation file a fleet's record names,
// relative to its transcripts dir (null for a key dir, whose transcript
// is always <key>/current.jsonl).
type dumpEntry struct {
	r    store.KeyReport
	file string
}

func (e dumpEntry) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.r)
	if err != nil {
		return nil, err
	}
	f, err := json.Marshal(orNull(e.file))
	if err != nil {
		return nil, err
	}
	// The report is a JSON object: the field goes in before its end.
	b = append(b[:len(b)-1], `,"file":`...)
	return append(append(b, f...), '}'), nil
}
