package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"sessdb/fleet"
	"sessdb/store"
)

var cmdReap = &command{
	name:  "reap",
	usage: "reap [--ttl-days N] [--dry-run [--at TIME]] [--json] [DIR | --etcd-endpoints URLS --transcripts-dir DIR [--grace D]]",
	short: "remove keys whose last promotion is older than the TTL, and stray temp files older than an hour (on a fleet, the files no record needs, past --grace)",
	long: `
Removes every key of the sessions root (DIR, else --sessions-dir or
PI_SESSIONS_DIR) whose last completed promotion is older than the TTL
(--ttl-days, PI_SESSIONS_TTL_DAYS, default 14; 0 removes no key), each under
its exclusive lock after checking the age again under that lock, so a
promotion landing meanwhile is never deleted. A key is removed whole or not
at all: one that holds anything the store does not write (a subdirectory, a
FIFO, a file of another name) is left whole and named, with what is in the
way (refuse-key). Otherwise the key dir is renamed to .reaped-<key>-<random>
under the root, so that the key is gone in one step, and then removed; a
reap killed in between leaves only that dir, which the next reap (or check
--repair) removes, or moves back to its key if a promotion that was waiting
for the lock landed in it. On a full disk or quota, where the file system
refuses that rename, the key dir is emptied and removed where it is
(docs/operations.md). From the keys it keeps it removes stray temp
files older than an hour, never the one a pending promotion names nor a
meta.db temp a creation holds (its flock). An
empty key dir (a refused first promotion leaves one) goes once its own
mtime is older than the TTL, by one rmdir; a key dir that holds nothing
but a meta.db with no record, stamp or promotion in it (a first promotion
killed before its commit leaves one) goes as an expired key does once it
and its meta.db are older than the TTL (meta.db's mtime not counted once
a reap has written its reaping entry there: a reap stopped after that
entry leaves the key to the next reap). A quarantine dir (check
--quarantine) is left alone. One line per action and
a summary; --json one object per action and a summary (docs/json.md).
--dry-run prints what would be done and changes nothing; a key dir its
runner could not change (permission denied, a read-only file system) it
fails, as the run would.

A key reap could not do (an I/O error, a damaged meta.db or, on a fleet,
record, its lock not had in time, something in it that is not the store's)
is named on stderr, and reap exits 1 after the others.

On a fleet (--etcd-endpoints, docs/fleet.md) reap removes each expired key
under its lease-backed etcd lock, by a delete guarded by the revision it
judged (a promotion landing meanwhile is never removed), with its file; then
every file no record needs once --grace has passed: generations superseded
longer ago than that, orphans of promotions that lost or died
(remove-orphan), temps of dead writes, and the temp of the dir's mark a
crash left (remove-temp). Ages, the TTL's too, are told by
this host's clock or the file server's where that is behind; a --dry-run
reads no server's clock, so a host whose clock is ahead lists keys and
files a real reap keeps.`,
	example: `  sessdb reap --dry-run /var/lib/pi/sessions
  PI_SESSIONS_TTL_DAYS=30 sessdb reap /var/lib/pi/sessions
  sessdb reap --json /var/lib/pi/sessions | jq -r 'select(.action == "remove-key") | .path'
  sessdb reap --etcd-endpoints http://127.0.0.1:2379 --transcripts-dir /srv/pi/transcripts --grace 2h`,
	exits:   []int{exitOK, exitFault, exitUsage, exitInterrupted},
	maxArgs: 1,
	bind:    bindReap,
	changes: true,
}

// Reap's actions (docs/json.md).
const (
	reapRemoveKey  = "remove-key"    // an expired key removed whole (--dry-run: would be)
	reapRefuseKey  = "refuse-key"    // an expired key left whole: something in it is not the store's (exit 1)
	reapRemoveTemp = "remove-temp"   // a stray temp file removed (--dry-run: would be)
	reapOrphan     = "remove-orphan" // a fleet's file no record needs, past the grace period, removed (would be)
	reapFinish     = "finish-reap"   // a reap-owned dir an interrupted reap left, removed (would be)
	reapRestore    = "restore-key"   // a reap-owned dir a promotion landed in, moved back to its key (would be)
	reapSkip       = "skip"          // a name left alone: not a key, not a directory, a quarantine dir
	reapFail       = "fail"          // a name reap could not do: detail says why (exit 1)
)

// removal is how the text report says an action that removed or moved
// something was done ("removed"), or "" for one that changed nothing.
func removal(action string) string {
	switch action {
	case reapRemoveKey, reapRemoveTemp, reapOrphan:
		return "removed"
	case reapFinish:
		return "finished"
	case reapRestore:
		return "restored"
	}
	return ""
}

// actionKey is the key a's line names, or "" for none.
func actionKey(a reapAction) string {
	if a.Key == nil {
		return ""
	}
	return *a.Key
}

// reapAction is one line of reap --json.
type reapAction struct {
	Action string  `json:"action"`
	Key    *string `json:"key"`  // the key it concerns; null for a name that is not a key's
	Path   string  `json:"path"` // relative to the root
	DryRun bool    `json:"dry_run"`
	Detail *string `json:"detail"` // why a name was skipped, refused or failed; null otherwise
}

// reapSummary ends reap --json.
type reapSummary struct {
	Entries     int   `json:"entries"`
	Keys        int   `json:"keys"`
	Removed     int   `json:"removed"` // keys
	Refused     int   `json:"refused"` // expired keys left whole
	Swept       int   `json:"swept"`   // temp files
	Orphans     int   `json:"orphans"` // a fleet's orphaned files
	Finished    int   `json:"finished"`
	Restored    int   `json:"restored"`
	Kept        int   `json:"kept"`
	Skipped     int   `json:"skipped"`
	Failed      int   `json:"failed"`
	TTLSeconds  int64 `json:"ttl_seconds"`
	DryRun      bool  `json:"dry_run"`
	Interrupted bool  `json:"interrupted"`
}

func bindReap(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	grace := bindGrace(fs)
	dryRun := fs.Bool("dry-run", false, "remove nothing; print what would be removed")
	asJSON := fs.Bool("json", false, "print one JSON object per action, then a summary object (docs/json.md)")
	at := bindAt(fs)
	return func(inv *invocation) int {
		_, atOpt, err := at.now()
		if err != nil {
			return inv.rep.usage(err)
		}
		if inv.given("at") && !*dryRun {
			// A key removed for a time that is not now is a key lost.
			return inv.rep.usage(errors.New("--at goes with --dry-run: a reap removes keys only by the time it is"))
		}
		fc, onFleet, code := fleetOf(inv, cfg, fk, inv.arg(0))
		if code != exitOK {
			return code
		}
		g, err := grace.parse(inv, onFleet)
		if err != nil {
			return inv.rep.usage(err)
		}
		sopts, err := storeOptions(cfg, inv, atOpt)
		if err != nil {
			return inv.rep.config(err)
		}
		prog := progressTo(inv, "reap")
		// Signals are caught from before a fleet's connection, which can
		// wait up to its request timeout (openFleetWalk).
		ctx, stop := interruptContext()
		defer stop()
		// reap removes what the store holds past its time, and lists it.
		var reap func(context.Context) ([]reapAction, reapSummary, error)
		if onFleet {
			b, stopped, code := openFleetWalk(ctx, inv, fk, fc)
			switch {
			case stopped:
				// A signal while it connected: nothing judged or removed.
				reap = func(ctx context.Context) ([]reapAction, reapSummary, error) {
					actions, sum := fleetReapActions(fleet.ReapResult{}, fc.TranscriptsDir, *dryRun)
					return actions, sum, ctx.Err()
				}
			case b == nil:
				return code
			default:
				defer b.Close()
				reap = func(ctx context.Context) ([]reapAction, reapSummary, error) {
					res, err := b.Reap(ctx, fleet.ReapOptions{TTL: sopts.Bounds.TTL, Grace: g, Now: sopts.Now, DryRun: *dryRun, Progress: prog.report()})
					actions, sum := fleetReapActions(res, b.Dir(), *dryRun)
					return actions, sum, err
				}
			}
		} else {
			st, code := openWalk(inv, cfg, atOpt)
			if st == nil {
				return code
			}
			// The store reaps a missing root as an empty one; here, as for
			// every walk, a root that is not there is a fault.
			if _, err := os.Stat(st.Root()); err != nil {
				return inv.rep.fault(err)
			}
			reap = func(ctx context.Context) ([]reapAction, reapSummary, error) {
				res, err := st.ReapWith(ctx, store.ReapOptions{DryRun: *dryRun, Progress: prog.report()})
				actions, sum := reapActions(res, st.Root(), *dryRun)
				return actions, sum, err
			}
		}
		if sopts.Bounds.TTL == 0 {
			inv.rep.warn("the TTL is 0: no key expires; only stray temp files (and a fleet's orphans) are removed")
		}

		actions, sum, err := reap(ctx)
		prog.clear()
		interrupted := errors.Is(err, context.Canceled)
		if err != nil && !interrupted {
			// Nothing is printed on stdout, no zero summary; but what was
			// removed before the failure (a fleet's etcd lost after some
			// keys) is gone for good, and is named on stderr.
			if !*dryRun {
				nameRemovals(inv, actions, "%s %s before reap stopped")
			}
			return fleetError(inv, fk, err)
		}
		sum.TTLSeconds, sum.Interrupted = int64(sopts.Bounds.TTL.Seconds()), interrupted
		for _, a := range actions {
			if a.Action == reapFail || a.Action == reapRefuseKey {
				inv.rep.keyFault(a.Path, *a.Detail)
			}
		}

		w := bufio.NewWriter(inv.stdout)
		if *asJSON {
			jw := &jsonWriter{w: w}
			for _, a := range actions {
				jw.encode(a)
			}
			jw.encode(summaryLine[reapSummary]{sum})
			err = jw.err
		} else {
			err = writeReapText(w, actions, sum)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil && !*dryRun {
			// The report is lost (its reader gone, a full disk), the
			// removals are not: they are named, as a failed reap's are.
			nameRemovals(inv, actions, "%s %s, but the report was not written on stdout")
		}
		status := exitOK
		if sum.Failed > 0 || sum.Refused > 0 {
			status = exitFault
		}
		return inv.endWalk(w, err, interrupted, sum.Entries, status)
	}
}

// nameRemovals names on stderr each action that removed, finished or
// restored something (format takes what was done and the path), for a
// reap whose report does not reach stdout: what it did is done for good.
func nameRemovals(inv *invocation, actions []reapAction, format string) {
	for _, a := range actions {
		if done := removal(a.Action); done != "" {
			inv.rep.done(actionKey(a), fmt.Sprintf(format, done, a.Path))
		}
	}
}

// reapActions lists what res did (or would do), in path order, and counts
// it.
func reapActions(res store.ReapResult, root string, dryRun bool) ([]reapAction, reapSummary) {
	// A reason quotes paths relative to the root, as every report does.
	unroot := strings.NewReplacer(strings.TrimSuffix(root, "/")+"/", "")
	var actions []reapAction
	keyOf := func(path string) *string {
		k, _, _ := strings.Cut(path, "/")
		if store.ValidKey(k) {
			return &k
		}
		if owned, ok := store.ReapedKey(k); ok {
			return &owned
		}
		if owned, ok := store.QuarantinedKey(k); ok {
			return &owned
		}
		return nil
	}
	add := func(action, path string, detail *string) {
		actions = append(actions, reapAction{Action: action, Key: keyOf(path), Path: path, DryRun: dryRun, Detail: detail})
	}
	for _, k := range res.Removed {
		add(reapRemoveKey, k, nil)
	}
	for _, t := range res.Swept {
		add(reapRemoveTemp, t, nil)
	}
	for _, n := range res.Finished {
		add(reapFinish, n, nil)
	}
	for _, n := range res.Restored {
		add(reapRestore, n, nil)
	}
	failed, refused := map[string]bool{}, map[string]bool{}
	for _, name := range res.Failed {
		failed[name] = true
	}
	for _, name := range res.Refused {
		refused[name] = true
	}
	for name, why := range res.Skipped {
		why = unroot.Replace(why)
		switch {
		case refused[name]:
			add(reapRefuseKey, name, &why)
		case failed[name]:
			add(reapFail, name, &why)
		default:
			add(reapSkip, name, &why)
		}
	}
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Path < actions[j].Path })

	sum := reapSummary{
		Removed: len(res.Removed), Refused: len(res.Refused), Swept: len(res.Swept), Finished: len(res.Finished), Restored: len(res.Restored),
		Kept: res.Kept, Skipped: len(res.Skipped) - len(res.Failed) - len(res.Refused), Failed: len(res.Failed), DryRun: dryRun,
	}
	sum.Entries = sum.Removed + sum.Kept + sum.Finished + sum.Restored + len(res.Skipped)
	sum.Keys = sum.Removed + sum.Kept // every name reap removed or kept is a key
	for name := range res.Skipped {
		if store.ValidKey(name) {
			sum.Keys++
		}
	}
	return actions, sum
}
