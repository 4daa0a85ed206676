package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"sessdb/store"
)

var cmdReap = &command{
	name:  "reap",
	usage: "reap [--ttl-days N] [--dry-run] [--json] [DIR]",
	short: "remove keys whose last promotion is older than the TTL, and stray temp files older than an hour",
	long: `
Removes every key of the sessions root (DIR, else --sessions-dir or
PI_SESSIONS_DIR) whose last completed promotion is older than the TTL
(--ttl-days, PI_SESSIONS_TTL_DAYS, default 14; 0 removes no key), each under
its exclusive lock after checking the age again under that lock, so a
promotion landing meanwhile is never deleted. From the keys it keeps it
removes stray temp files older than an hour, never the one a pending
promotion names. One line per action and a summary; --json one object per
action and a summary (docs/json.md). --dry-run prints what would be removed
and changes nothing.

A key reap could not do (an I/O error, its lock not had in time) is named on
stderr, and reap exits 1 after the others.`,
	example: `  sessdb reap --dry-run /var/lib/pi/sessions
  PI_SESSIONS_TTL_DAYS=30 sessdb reap /var/lib/pi/sessions
  sessdb reap --json /var/lib/pi/sessions | jq -r 'select(.action == "remove-key") | .path'`,
	exits:   []int{exitOK, exitFault, exitUsage, exitInterrupted},
	maxArgs: 1,
	bind:    bindReap,
}

// Reap's actions (docs/json.md).
const (
	reapRemoveKey  = "remove-key"  // an expired key removed (--dry-run: would be)
	reapRemoveTemp = "remove-temp" // a stray temp file removed (--dry-run: would be)
	reapSkip       = "skip"        // a name left alone: not a key, not a directory
	reapFail       = "fail"        // a name reap could not do: detail says why (exit 1)
)

// reapAction is one line of reap --json.
type reapAction struct {
	Action string  `json:"action"`
	Key    *string `json:"key"`  // the key dir it concerns; null for a name that is not a key
	Path   string  `json:"path"` // relative to the root
	DryRun bool    `json:"dry_run"`
	Detail *string `json:"detail"` // why a name was skipped or failed; null otherwise
}

// reapSummary ends reap --json.
type reapSummary struct {
	Entries     int   `json:"entries"`
	Keys        int   `json:"keys"`
	Removed     int   `json:"removed"` // keys
	Swept       int   `json:"swept"`   // temp files
	Kept        int   `json:"kept"`
	Skipped     int   `json:"skipped"`
	Failed      int   `json:"failed"`
	TTLSeconds  int64 `json:"ttl_seconds"`
	DryRun      bool  `json:"dry_run"`
	Interrupted bool  `json:"interrupted"`
}

func bindReap(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	dryRun := fs.Bool("dry-run", false, "remove nothing; print what would be removed")
	asJSON := fs.Bool("json", false, "print one JSON object per action, then a summary object (docs/json.md)")
	return func(inv *invocation) int {
		st, code := openWalk(inv, cfg)
		if st == nil {
			return code
		}
		// The store reaps a missing root as an empty one; here, as for
		// every walk, a root that is not there is a fault.
		if _, err := os.Stat(st.Root()); err != nil {
			return inv.rep.fault(err)
		}
		b, _ := cfg.parseBounds(os.Getenv) // parsed without error by openWalk
		if b.TTL == 0 {
			inv.rep.warn("the TTL is 0: no key expires; only stray temp files are removed")
		}

		ctx, stop := interruptContext()
		defer stop()
		prog := progressTo(inv, "reap")
		res, err := st.ReapWith(ctx, store.ReapOptions{DryRun: *dryRun, Progress: prog.report()})
		prog.clear()
		interrupted := errors.Is(err, context.Canceled)
		if err != nil && !interrupted {
			return inv.rep.fault(err) // nothing is printed: no zero summary
		}
		actions, sum := reapActions(res, st.Root(), *dryRun)
		sum.TTLSeconds, sum.Interrupted = int64(b.TTL.Seconds()), interrupted
		for _, a := range actions {
			if a.Action == reapFail {
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
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		switch {
		case err != nil:
			return inv.rep.fault(fmt.Errorf("write: %w", err))
		case interrupted:
			return inv.rep.interrupted(sum.Entries)
		case sum.Failed > 0:
			return exitFault
		}
		return exitOK
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
		if !store.ValidKey(k) {
			return nil
		}
		return &k
	}
	for _, k := range res.Removed {
		actions = append(actions, reapAction{Action: reapRemoveKey, Key: keyOf(k), Path: k, DryRun: dryRun})
	}
	for _, t := range res.Swept {
		actions = append(actions, reapAction{Action: reapRemoveTemp, Key: keyOf(t), Path: t, DryRun: dryRun})
	}
	failed := map[string]bool{}
	for _, name := range res.Failed {
		failed[name] = true
	}
	for name, why := range res.Skipped {
		why = unroot.Replace(why)
		a := reapAction{Action: reapSkip, Key: keyOf(name), Path: name, DryRun: dryRun, Detail: &why}
		if failed[name] {
			a.Action = reapFail
		}
		actions = append(actions, a)
	}
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Path < actions[j].Path })

	sum := reapSummary{Removed: len(res.Removed), Swept: len(res.Swept), Kept: res.Kept, Skipped: len(res.Skipped) - len(res.Failed), Failed: len(res.Failed), DryRun: dryRun}
	sum.Entries = sum.Removed + sum.Kept + len(res.Skipped)
	sum.Keys = sum.Removed + sum.Kept // every name reap removed or kept is a key
	for name := range res.Skipped {
		if store.ValidKey(name) {
			sum.Keys++
		}
	}
	return actions, sum
}

// writeReapText writes one line per action and a summary line.
func writeReapText(w io.Writer, actions []reapAction, s reapSummary) error {
	removed, reaped := "removed", "reaped"
	if s.DryRun {
		removed, reaped = "would remove", "would reap"
	}
	for _, a := range actions {
		verb, what := removed, ""
		switch a.Action {
		case reapRemoveKey:
			what = "expired key"
		case reapRemoveTemp:
			what = "stray temp file"
		case reapSkip:
			verb, what = "skipped", *a.Detail
		case reapFail:
			verb, what = "failed", *a.Detail
		}
		if _, err := fmt.Fprintf(w, "%-12s  %s  (%s)\n", verb, printable(a.Path), printable(what)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s %s and %s; kept %s, skipped %d", reaped,
		plural(s.Removed, "key"), plural(s.Swept, "temp file"), plural(s.Kept, "key"), s.Skipped)
	if err == nil && s.Failed > 0 {
		_, err = fmt.Fprintf(w, ", failed %d", s.Failed)
	}
	if err == nil {
		_, err = fmt.Fprintf(w, " (TTL %s)", plural(int(s.TTLSeconds/86400), "day"))
	}
	if err == nil && s.Interrupted {
		_, err = fmt.Fprint(w, " (interrupted)")
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}
