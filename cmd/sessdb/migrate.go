package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sessdb/fleet"
	"sessdb/migrate"
)

var cmdMigrate = &command{
	name:  "migrate",
	usage: "migrate [--to-legacy | --to etcd | --from etcd] [--dry-run] [--json] [--workers N] [DIR] [etcd connection flags]",
	short: "move a sessions root's legacy key dirs into meta.db (or back), or a whole root into a fleet on etcd (or back)",
	long: `
For each key dir of the sessions root (DIR, else --sessions-dir or
PI_SESSIONS_DIR) in the legacy file-per-sidecar layout: under the key's
meta.db lock, reads every legacy sidecar with the legacy reader's rules,
records current.jsonl's size, CRC32C and mtime, commits all of it in one
transaction, and only then removes the legacy files. Every key judged before
gets the same verdict after, and after --to-legacy, which writes the legacy
files back and removes meta.db. One line per entry (with every odd legacy
value and how it is read) and a summary; --json one object per entry and a
summary (docs/json.md). --dry-run prints the plan and changes nothing.

A run is idempotent and safe to interrupt: Ctrl-C starts no new key, finishes
the keys under way (a transcript being read for its checksum, or a pending
promotion's temp by --to-legacy's roll-forward, is abandoned within a megabyte,
its key left as it was and not printed, or printed failed "rolled forward only"
where that roll-forward had been done), prints what was done and exits 130; a
stdout that can no longer be written (its reader gone, a full disk) stops it
the same way, exit 1, its stderr line saying so (migrate is not killed by
SIGPIPE); a killed run loses nothing, and the next run finishes its keys and
removes a meta.db temp it left (once the temp is a minute old: a younger one
may be a creation under way). A key with a fresh legacy lock (a legacy worker
may be promoting), or whose lock is not had in time, or that fails, is named on
stderr, and migrate exits 1 after the others: fix the cause and run it again.
Stop the workers first.

--to etcd moves every key dir of the root into a fleet (the etcd connection
flags: docs/fleet.md): under the key's lock, its transcript written once into
the transcripts dir, then its record and whole history created in one etcd
transaction that commits only if etcd holds nothing for the key. The key dir is
left as it was, the way back. --from etcd moves every record of the fleet into
a key dir of the root, written as a promotion writes. Either way a key the
destination already holds at the same generation is already (--to writes its
generation file again from the key dir where it is missing from the transcripts
dir; the same bytes under other stamps, promoted on another root, are a
conflict); one whose generation in etcd descends from the key dir's (the fleet
promoted it since) is already (--to) or brought forward (--from); anything
else, a key dir promoted since etcd got it included (--to creates records, it
never writes over one), is a conflict, reported and left alone (exit 1): no
re-run settles it, and the summary says what does (one side moved aside or
removed, docs/fleet.md). A legacy key dir must be migrated to meta.db first.
Once a key finds etcd unavailable (no answer within --etcd-timeout), the keys
after it are failed at once, not tried (exit 1), rather than each waiting out
the timeout in turn. Ctrl-C ends the etcd request, the roll-forward of a
pending promotion (nothing renamed), the read of a transcript for its checksum
(or of the fleet's generation for the key dir's bytes, where no history tells
whether one descends from the other) and the copy of each key under way: a key
it stops before its create is sent (--from etcd: before its commit) is left as
it was (its copy removed; --to etcd: the key's dir the copy made in the
transcripts dir stays, empty, for reap) and not printed, failed where a pending
promotion was rolled forward first (--from etcd: or stray temps removed); one
whose create it cut short (it may have landed) is failed, its file kept, and a
re-run finds it already or moves it. Killed at any point, a re-run converges;
every key judged before gets the same verdict after.`,
	example: `  sessdb migrate --dry-run /var/lib/pi/sessions
  sessdb migrate /var/lib/pi/sessions
  sessdb migrate --to-legacy /var/lib/pi/sessions
  sessdb migrate --to etcd --etcd-endpoints http://127.0.0.1:2379 --transcripts-dir /srv/pi/transcripts /var/lib/pi/sessions`,
	exits:   []int{exitOK, exitFault, exitUsage, exitInterrupted},
	maxArgs: 1,
	bind:    bindMigrate,
	changes: true,
}

// migrateWorkers overlaps the fsyncs of a few keys; more adds little on
// one disk (measured: docs/PERFORMANCE.md).
const migrateWorkers = 4

func bindMigrate(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindRoot(fs)
	toLegacy := fs.Bool("to-legacy", false, "write the legacy files back from meta.db and remove it (the rollback)")
	dryRun := fs.Bool("dry-run", false, "print the plan, every odd legacy value and how it will be read; change nothing")
	asJSON := fs.Bool("json", false, "print one JSON object per entry, then a summary object (docs/json.md)")
	workers := fs.String("workers", fmt.Sprint(migrateWorkers), "migrate `N` keys at once, 1..64")
	to := fs.String("to", "", "`etcd`: move the root into the fleet the etcd connection flags name")
	from := fs.String("from", "", "`etcd`: move the fleet the etcd connection flags name into the root")
	fk := bindFleet(fs)
	return func(inv *invocation) int {
		fleetWay := ""
		switch {
		case inv.given("to") && *to != "etcd", inv.given("from") && *from != "etcd":
			return inv.rep.usage(errors.New("--to and --from take etcd, the only other store there is"))
		case inv.given("to") && inv.given("from"), (inv.given("to") || inv.given("from")) && *toLegacy:
			return inv.rep.usage(errors.New("--to etcd, --from etcd and --to-legacy: choose one"))
		case inv.given("to"):
			fleetWay = "to"
		case inv.given("from"):
			fleetWay = "from"
		}
		n, err := parseUint("--workers", *workers, 64)
		if err == nil && n == 0 {
			err = fmt.Errorf("--workers: %s is out of range (want 1..64)", brief(*workers))
		}
		if err != nil {
			return inv.rep.usage(err)
		}
		root, err := cfg.dir(os.Getenv, inv.arg(0))
		if err != nil {
			return inv.rep.config(err)
		}
		if err := checkWalkRoot(root); err != nil {
			return inv.rep.config(err)
		}
		fc, on, err := fk.connection(os.Getenv)
		switch {
		case err != nil:
			return inv.rep.config(err)
		case fleetWay != "" && !on:
			return inv.rep.usage(fmt.Errorf("--%s etcd needs --etcd-endpoints (or PI_SESSIONS_ETCD_ENDPOINTS) and --transcripts-dir", fleetWay))
		case fleetWay == "" && on:
			return inv.rep.usage(errors.New("etcd endpoints are set (--etcd-endpoints or PI_SESSIONS_ETCD_ENDPOINTS) but neither --to etcd nor --from etcd is given: a fleet setting that would do nothing"))
		case on:
			// The library's refusal (fleet.CheckPlaces), asked here before
			// the fleet is opened, and said with the settings' names.
			var pe *fleet.PlaceError
			if errors.As(fleet.CheckPlaces(root, fc.TranscriptsDir), &pe) {
				_, tn := fk.transcriptsDir.get(os.Getenv)
				_, rn := cfg.dirSetting(os.Getenv, inv.arg(0))
				return inv.rep.config(placeError(pe, tn, rn))
			}
		}
		// Signals are caught from before a fleet's connection, which can
		// wait up to its request timeout (openFleetWalk).
		ctx, stop := interruptContext()
		defer stop()
		var b *fleet.Backend
		stopped := false
		if on {
			fc.Logger = inv.rep.storeLog()
			var code int
			b, stopped, code = openFleetWalk(ctx, inv, fk, fc)
			switch {
			case stopped:
			case b == nil:
				return code
			default:
				defer b.Close()
			}
		}
		opts := migrate.Options{DryRun: *dryRun, Workers: int(n)}
		prog := progressTo(inv, "migrate")
		opts.Progress = prog.report()

		w := bufio.NewWriter(clearing(inv.stdout, prog))
		jw := &jsonWriter{w: w}
		started := false
		each := func(r migrate.Report) error {
			if !started && !*asJSON && *dryRun {
				fmt.Fprintln(w, "dry run: nothing is changed; each line says what a run would do")
			}
			started = true
			if r.Action == migrate.Locked || r.Action == migrate.Failed || r.Action == fleet.Conflict {
				prog.clear()
				inv.rep.keyFault(r.Key, string(r.Action)+": "+r.Cause)
			}
			var err error
			if *asJSON {
				err = jw.encode(r)
			} else {
				err = migrateText(w, r)
			}
			if err == nil {
				err = w.Flush() // a long run shows its reports as they come
			}
			switch {
			case err != nil && *dryRun:
				err = fmt.Errorf("write: %w (a dry run: nothing was changed)", err)
			case err != nil:
				err = fmt.Errorf("write: %w: stopped, the keys under way finished; run migrate again to finish the rest", err)
			}
			return err
		}
		var sum fleet.MigrateSummary
		fopts := fleet.MigrateOptions{DryRun: *dryRun, Workers: int(n), Progress: opts.Progress}
		switch {
		case stopped:
			// A signal while it connected: nothing read or written.
			sum = fleet.MigrateSummary{Summary: migrate.Summary{Direction: fleetWay + "-etcd", DryRun: *dryRun, Interrupted: true}}
		case fleetWay == "to":
			sum, err = fleet.ToEtcd(ctx, root, b, fopts, each)
		case fleetWay == "from":
			sum, err = fleet.FromEtcd(ctx, b, root, fopts, each)
		case *toLegacy:
			sum.Summary, err = migrate.ToLegacyContext(ctx, root, opts, each)
		default:
			sum.Summary, err = migrate.ToDBContext(ctx, root, opts, each)
		}
		prog.clear()
		if err != nil && !sum.Interrupted {
			return fleetError(inv, fk, err)
		}
		if *asJSON {
			jw.encode(summaryLine[fleet.MigrateSummary]{sum})
			err = jw.err
		} else {
			remedy := ""
			if b != nil && sum.Conflicts > 0 {
				remedy = b.ConflictRemedy(root)
			}
			err = migrateSummary(w, sum, remedy)
		}
		status := exitOK
		if !sum.Complete() {
			status = exitFault
		}
		return inv.endWalk(w, err, sum.Interrupted, sum.Entries, status)
	}
}

// placeError is the refusal pe said with the names of the transcripts
// dir's setting (tn) and the sessions root's (rn).
func placeError(pe *fleet.PlaceError, tn, rn string) error {
	const own = "the fleet's transcripts dir is a directory of its own, which every worker mounts; give the fleet's"
	dir := quoteName(pe.Dir)
	switch pe.Where {
	case fleet.DirIsRoot:
		return fmt.Errorf("%s: %s is the sessions root this migration moves (%s): %s", tn, dir, rn, own)
	case fleet.DirInKeyDir:
		return fmt.Errorf("%s: %s is inside the key dir %s of the sessions root this migration moves (%s), which holds a key's own files alone: %s", tn, dir, pe.Key, rn, own)
	case fleet.DirInRoot:
		return fmt.Errorf("%s: %s is inside the sessions root this migration moves (%s), at %s, which a removal of the old root would take with the fleet's transcripts: %s", tn, dir, rn, quoteName(pe.Name), own)
	default:
		return fmt.Errorf("%s: the sessions root this migration moves (%s) is inside %s, at %s, which holds the fleet's key dirs alone: a sessions root is a directory of its own; give another", tn, rn, dir, quoteName(pe.Name))
	}
}

// migrateText writes one line per entry, then one indented line per
// oddity: what was found and how it is read. Names, values and causes come
// from the disk: they are made printable.
func migrateText(w io.Writer, r migrate.Report) error {
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
	_, err := fmt.Fprintln(w, printable(strings.TrimRight(line, " ")))
	for _, o := range r.Oddities {
		if err == nil {
			_, err = fmt.Fprintf(w, "    %s: %s -> %s\n", printable(o.File), printable(o.Found), printable(o.ReadAs))
		}
	}
	return err
}

// migrateValues is the one-line form of what a key holds.
func migrateValues(v migrate.Values) string {
	var b strings.Builder
	if t := v.Transcript; t != nil {
		fmt.Fprintf(&b, "transcript %d B crc32c %s promoted %s", t.Size, t.CRC32C, t.PromotedAt.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("no transcript")
	}
	// The stamps quoted as an error quotes a value (brief: whole up to
	// 64 bytes, else its head and its length): they are another binary's
	// or a hand's as often as sessdb's, as large as etcd or a meta.db
	// takes, and a 1.2 MB pi version made a line of 1.2 MB. The JSON
	// keeps them whole.
	venue := "(absent: local)"
	if v.Venue != nil {
		venue = brief(*v.Venue)
	}
	fmt.Fprintf(&b, ", venue %s, pi-version %s", venue, brief(v.PiVersion))
	if v.ResumeChain != nil {
		fmt.Fprintf(&b, ", chain %d", *v.ResumeChain)
	}
	if c := v.Context; c != nil {
		fmt.Fprintf(&b, ", context %d/%d", c.Tokens, c.Window)
		if c.Model != "" {
			b.WriteString(" " + bounded(c.Model))
		}
	}
	return b.String()
}

// migrateSummary writes the summary line of a run, and for one that did
// not convert every key what to do; remedy, where keys are in conflict,
// is what settles a conflict (fleet.Backend.ConflictRemedy), which no
// re-run does.
func migrateSummary(w io.Writer, s fleet.MigrateSummary, remedy string) error {
	verb := "ran"
	if s.DryRun {
		verb = "would run"
	}
	_, err := fmt.Fprintf(w, "%s %s over %s in %.1fs: %d migrate, %d already, %d skip, %d locked, %d failed", verb, s.Direction, entries(s.Entries), s.Seconds, s.Migrated, s.Already, s.Skipped, s.Locked, s.Failed)
	if err == nil && s.Conflicts > 0 {
		_, err = fmt.Fprintf(w, ", %d in conflict", s.Conflicts)
	}
	if err == nil && s.Interrupted {
		_, err = fmt.Fprint(w, " (interrupted)")
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	if err == nil && !s.Complete() {
		_, err = fmt.Fprintln(w, "some keys were not converted (see locked, failed and conflict above): fix the cause and run again; a re-run finishes them and leaves the rest as they are")
	}
	if err == nil && s.Conflicts > 0 && remedy != "" {
		_, err = fmt.Fprintln(w, remedy)
	}
	return err
}
