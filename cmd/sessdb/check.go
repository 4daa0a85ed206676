package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"sessdb/fleet"
	"sessdb/store"
)

var cmdCheck = &command{
	name:  "check",
	usage: "check [--repair [--accept KEY | --quarantine KEY]] [--json] [--deep-check-timeout D] [DIR | --etcd-endpoints URLS --transcripts-dir DIR [--grace D]]",
	short: "find damage under a sessions root or in a fleet; --repair fixes what it safely can",
	long: `
Examines every entry under the sessions root (DIR, else --sessions-dir or
PI_SESSIONS_DIR): each key as resolve reads it, then bbolt's full consistency
check of its meta.db in a child process (a damaged file can crash the process
that maps it). Reports damaged or undecodable meta.db files, a meta page bbolt
silently falls back from, transcripts that do not match their record, pending
promotions, stray temps, links, a root, key dir or file whose mode lacks the
owner's bits the store needs, a key's dir or file root owns in a root another
user owns, which that user may not use (one sessdb made as root before
2026-12-06; on Linux it now makes what it makes as root the dir's owner's),
what an interrupted reap left (.reaped-<key>-*), quarantine dirs and names
that are not keys (notices). One line per finding and a summary; --json one
object per finding and a summary (docs/json.md).

--repair acts on proof only: it gives the root, a key dir, meta.db or
transcript the owner's bits the store needs of it (mode: bits only added; an
entry root owns, owner, is left for the operator's chown: the root's owner
could have put another user's file at a key's name), then, each key under its
exclusive lock, it removes history entries that do not decode where nothing
else of meta.db is damaged (the record and stamps kept), rolls a pending
promotion forward, moves a damaged meta.db aside (renamed, never deleted; a
history at the last sequence number is numbered again in place instead, and
an invalid meta page whose other page describes the transcript in place is
written again by a commit, the record and stamps kept), removes stray temps,
finishes an interrupted reap; then it looks again, and the exit status counts
what remains. Without --repair check changes nothing. A key that cannot be
examined (locked, unreadable), and a repair that failed (a full disk, an I/O
error, the key's lock not had: its line says "not repaired", on a fleet "not
removed"), are named on stderr, and check exits 1 after the others.

Two operator decisions act on one key dir only, under its exclusive lock,
only with --repair, on a sessions root. --accept KEY repairs KEY, then
records the transcript in place as its identity (after an edit out of band,
a restore, a meta.db moved aside): the next generation, the stamps kept
from the record (a moved-aside meta.db gives a fresh record with none,
which cold-starts until the next promotion), the decision in the key's
history (outcome accepted).
--quarantine KEY moves the key dir, whole and unrepaired, to
.quarantine-<key>-<UTC time> under the root, where no resolve finds it and
sessdb never removes it, and says where. An action that could not be done
is named on stderr, and check exits 1.

On a fleet (--etcd-endpoints, docs/fleet.md) check examines every record and
the transcripts dir: a record that does not decode, a generation file missing
or not what its record says (its size, and its CRC32C read no further than the
record's size plus one byte), links, names that are no key, the modes and
owners of the dir, its mark, key dirs and generations (as on a root), and
orphans, files no record needs older than --grace (notices). --repair removes
the orphans, each key's under its lease-backed etcd lock, judged again there
from a fresh read of its record, numbers again in place a history whose newest
entry is in the last slot (the newest 64 entries kept, the record not
rewritten), and gives a mode its owner's bits. --accept, --quarantine and
--deep-check-timeout act on a key dir's files, which a fleet has none of: there
they are a usage error (exit 2). A record check finds damaged is left for the
operator to look at and remove with etcdctl, its history first: --repair's line
names both keys.`,
	example: `  sessdb check /var/lib/pi/sessions; echo "exit $?"
  sessdb check --repair /var/lib/pi/sessions
  sessdb check --json /var/lib/pi/sessions | jq -c 'select(.severity == "problem")'
  sessdb check --repair --accept 4668107cac2e99b44415c5606b32ef14 /var/lib/pi/sessions
  sessdb check --repair --quarantine 4668107cac2e99b44415c5606b32ef14 /var/lib/pi/sessions
  sessdb check --repair --etcd-endpoints http://127.0.0.1:2379 --transcripts-dir /srv/pi/transcripts`,
	exits:   []int{exitOK, exitFault, exitUsage, exitIssues, exitInterrupted},
	maxArgs: 1,
	bind:    bindCheck,
	changes: true,
}

// checkSummary ends check --json.
type checkSummary struct {
	store.CheckSummary
	Failed      int  `json:"failed"` // findings of entries that could not be examined, or a repair or operator action not done (exit 1)
	Repair      bool `json:"repair"` // --repair was given
	Interrupted bool `json:"interrupted"`
	notRepaired int  // of Failed, the repairs and operator actions not done
}

func bindCheck(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	grace := bindGrace(fs)
	repair := fs.Bool("repair", false, "give the root, a key dir or its files the owner's bits the store needs, roll pending promotions forward, move a damaged meta.db aside (never deleted), remove stray temps, finish an interrupted reap; every action is printed")
	asJSON := fs.Bool("json", false, "print one JSON object per finding, then a summary object (docs/json.md)")
	timeout := bindDuration(fs, "deep-check-timeout", 30*time.Second, "on a sessions root: how long bbolt's consistency check of one meta.db may take, `D`, before its process is killed (a fleet has no meta.db: refused there)")
	accept := fs.String("accept", "", "with --repair, on a sessions root (a fleet has no key dir: refused there): repair `KEY` only, then record its transcript in place as its identity (the operator's decision, in its history)")
	quarantine := fs.String("quarantine", "", "with --repair, on a sessions root (refused on a fleet): move `KEY`'s dir aside whole, to .quarantine-<key>-<time> under the root, instead of repairing it")
	return func(inv *invocation) int {
		if *timeout <= 0 {
			return inv.rep.usage(errors.New("--deep-check-timeout: must be positive"))
		}
		for _, a := range []struct{ flag, key string }{{"accept", *accept}, {"quarantine", *quarantine}} {
			switch {
			case !inv.given(a.flag):
			case !*repair:
				return inv.rep.usage(fmt.Errorf("--%s acts on the key, so it needs --repair", a.flag))
			case !store.ValidKey(a.key):
				return inv.rep.usage(fmt.Errorf("--%s %s: %w", a.flag, brief(a.key), store.ErrInvalidKey))
			}
		}
		if inv.given("accept") && inv.given("quarantine") {
			return inv.rep.usage(errors.New("give --accept or --quarantine, not both"))
		}
		fc, onFleet, code := fleetOf(inv, cfg, fk, inv.arg(0))
		if code != exitOK {
			return code
		}
		g, err := grace.parse(inv, onFleet)
		if err != nil {
			return inv.rep.usage(err)
		}
		prog := progressTo(inv, "check")
		// Signals are caught from before a fleet's connection, which can
		// wait up to its request timeout (openFleetWalk).
		ctx, stop := interruptContext()
		defer stop()
		var check func(context.Context, func(store.Finding) error) (store.CheckSummary, error)
		if onFleet {
			for _, f := range []string{"accept", "quarantine", "deep-check-timeout"} {
				if inv.given(f) {
					return inv.rep.usage(fmt.Errorf("--%s acts on a key dir's meta.db and files: a fleet has none", f))
				}
			}
			sopts, err := storeOptions(cfg, inv)
			if err != nil {
				return inv.rep.config(err)
			}
			b, stopped, code := openFleetWalk(ctx, inv, fk, fc)
			switch {
			case stopped:
				// A signal while it connected: nothing checked.
				check = func(ctx context.Context, _ func(store.Finding) error) (store.CheckSummary, error) {
					return store.CheckSummary{}, ctx.Err()
				}
			case b == nil:
				return code
			default:
				defer b.Close()
				fopts := fleet.CheckOptions{Repair: *repair, Grace: g, Now: sopts.Now, MaxBytes: sopts.Bounds.MaxBytes, Progress: prog.report()}
				check = func(ctx context.Context, visit func(store.Finding) error) (store.CheckSummary, error) {
					return b.Check(ctx, fopts, visit)
				}
			}
		} else {
			st, code := openWalk(inv, cfg)
			if st == nil {
				return code
			}
			deep := &deepChecker{root: st.Root(), timeout: *timeout}
			defer deep.close()
			opts := store.CheckOptions{Repair: *repair, Accept: *accept, Quarantine: *quarantine, DeepCheck: deep.check, Progress: prog.report()}
			check = func(ctx context.Context, visit func(store.Finding) error) (store.CheckSummary, error) {
				return st.Check(ctx, opts, visit)
			}
		}

		w := bufio.NewWriter(clearing(inv.stdout, prog))
		// The findings are held until the walk has ended: a walk can fail
		// half-way (a fleet's etcd lost while its histories are read), and
		// a failed command prints nothing, where a buffer flushed on the
		// way would leave findings without their summary. Held in a
		// spool, as dump's are: a damaged root's report can be large.
		held := newSpool()
		defer held.Close()
		jw := &jsonWriter{w: held}
		sum := checkSummary{Repair: *repair}
		log := inv.rep.storeLog()
		var repaired []store.Finding
		visit := func(f store.Finding) error {
			if f.Repaired {
				log.Info().Str("path", f.Path).Str("kind", string(f.Kind)).Str("repair", f.Repair).Msg("check_repaired")
				repaired = append(repaired, f)
			}
			if f.Remains && (f.Kind == store.KindLocked || f.Kind == store.KindUnreadable) {
				sum.Failed++
				prog.clear()
				inv.rep.keyFault(f.Path, string(f.Kind)+": "+f.Detail)
			}
			if f.RepairFailed {
				// A repair or an operator action (--accept, --quarantine)
				// that did not act (a full disk, the key's lock not had)
				// is an entry the command could not do.
				sum.Failed++
				sum.notRepaired++
				prog.clear()
				inv.rep.keyFault(f.Path, string(f.Kind)+": "+f.Repair)
			}
			if *asJSON {
				return jw.encode(f)
			}
			return writeFinding(held, f)
		}
		sum.CheckSummary, err = check(ctx, visit)
		prog.clear()
		sum.Interrupted = errors.Is(err, context.Canceled)
		if err != nil && !sum.Interrupted {
			// No findings, no summary: the check did not finish. But
			// what it repaired before it stopped (a fleet's etcd lost
			// after some keys) is done for good, and is named.
			nameRepairs(inv, repaired, "repaired %s before check stopped: %s")
			return fleetError(inv, fk, err)
		}
		if *asJSON {
			jw.encode(summaryLine[checkSummary]{sum})
			err = jw.err
		} else {
			err = writeCheckSummary(held, sum)
		}
		if err == nil {
			_, err = held.WriteTo(w)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			// The report is lost (its reader gone, a full disk), the
			// repairs are not: they are named, as a failed check's are.
			nameRepairs(inv, repaired, "repaired %s, but the report was not written on stdout: %s")
		}
		status := exitOK
		switch {
		case sum.Failed > 0:
			status = exitFault
		case sum.Remaining > 0:
			status = exitIssues
		}
		return inv.endWalk(w, err, sum.Interrupted, sum.Entries, status)
	}
}

// writeFinding writes one finding as a line an operator can grep, and the
// repair's outcome under it, with what came from the disk made printable.
func writeFinding(w io.Writer, f store.Finding) error {
	if _, err := fmt.Fprintf(w, "%-7s  %s: %s: %s\n", f.Severity, printable(f.Path), f.Kind, printable(f.Detail)); err != nil {
		return err
	}
	if f.Repair != "" {
		if _, err := fmt.Fprintf(w, "         repair: %s\n", printable(f.Repair)); err != nil {
			return err
		}
	}
	return nil
}

func writeCheckSummary(w io.Writer, s checkSummary) error {
	_, err := fmt.Fprintf(w, "checked %s (%s): %s, %s", plural(s.Entries, "entry"), plural(s.Keys, "key"), plural(s.Problems, "problem"), plural(s.Notices, "notice"))
	if err == nil && s.Repair {
		_, err = fmt.Fprintf(w, "; repaired %d, %s remaining", s.Repaired, plural(s.Remaining, "problem"))
	}
	if n := s.Failed - s.notRepaired; err == nil && n > 0 {
		_, err = fmt.Fprintf(w, "; %d not examined", n)
	}
	if err == nil && s.notRepaired > 0 {
		_, err = fmt.Fprintf(w, "; %d not repaired", s.notRepaired)
	}
	if err == nil && s.Interrupted {
		_, err = fmt.Fprint(w, " (interrupted)")
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}

// plural is n and what, in the plural unless n is 1 ("2 entries").
func plural(n int, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case len(what) > 1 && what[len(what)-1] == 'y' && !strings.ContainsRune("aeiou", rune(what[len(what)-2])):
		return fmt.Sprintf("%d %sies", n, what[:len(what)-1])
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clearing returns stdout as is, or, when stdout and the progress line share
// a terminal, a writer that erases the progress line before each write.
func clearing(stdout io.Writer, p *progress) io.Writer {
	if p == nil || !isTerminal(stdout) {
		return stdout
	}
	return clearingWriter{stdout, p}
}

type clearingWriter struct {
	w io.Writer
	p *progress
}

func (c clearingWriter) Write(b []byte) (int, error) {
	c.p.clear()
	return c.w.Write(b)
}

// nameRepairs names on stderr each repair of a check whose report does not
// reach stdout (format takes the path and the repair): what it did is done
// for good.
func nameRepairs(inv *invocation, repaired []store.Finding, format string) {
	for _, f := range repaired {
		inv.rep.done(f.Key, fmt.Sprintf(format, f.Path, f.Repair))
	}
}
