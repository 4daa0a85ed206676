package main

import (
	"slices"
	"sort"
	"strings"

	"sessdb/fleet"
	"sessdb/fleet/shared"
)

// fleetReapActions lists what a fleet's reap did (or would do), in path
// order, and counts it, in the actions and counts of a key dir's reap: a
// key removed, a temp removed, a key reap could not do (fail: left for
// the next reap, exit 1), a key another removed under it (skip); and
// remove-orphan, a generation file no record needs, past the grace period.
// A temp of the dir's mark a crash left is a temp removed, no key's. Every
// key reap looked at is an entry, and every name under the records that is
// no key an entry skipped.
func fleetReapActions(res fleet.ReapResult, dir string, dryRun bool) ([]reapAction, reapSummary) {
	unroot := strings.NewReplacer(strings.TrimSuffix(dir, "/")+"/", "")
	var actions []reapAction
	add := func(action, path string, detail *string) {
		key, _, _ := strings.Cut(path, "/")
		actions = append(actions, reapAction{Action: action, Key: &key, Path: path, DryRun: dryRun, Detail: detail})
	}
	sum := reapSummary{Removed: len(res.Removed), Kept: res.Kept, Failed: len(res.Skipped), DryRun: dryRun}
	for _, k := range res.Removed {
		add(reapRemoveKey, k, nil)
	}
	for _, name := range res.Swept {
		if shared.IsMarkTemp(name) {
			// The dir's, no key's: a temp its first marking left.
			actions = append(actions, reapAction{Action: reapRemoveTemp, Path: name, DryRun: dryRun})
			sum.Swept++
			continue
		}
		if _, temp := shared.ParseTemp(name); temp {
			add(reapRemoveTemp, name, nil)
			sum.Swept++
		} else {
			add(reapOrphan, name, nil)
			sum.Orphans++
		}
	}
	for key, err := range res.Skipped {
		why := unroot.Replace(err.Error())
		add(reapFail, key, &why)
	}
	// A name under the records that is no key: skipped, with no key, as
	// a root's reap skips a name that is no key.
	for _, name := range res.NotKeys {
		why := "not a key"
		actions = append(actions, reapAction{Action: reapSkip, Path: name, DryRun: dryRun, Detail: &why})
	}
	// A key another removed under the reap (another reaper, an etcdctl
	// del): skipped, an entry and a key, as a root's reap skips a key dir
	// another reap removed under it.
	for _, key := range res.Gone {
		why := "removed by another since this reap listed it"
		add(reapSkip, key, &why)
	}
	sum.Skipped = len(res.NotKeys) + len(res.Gone)
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Path < actions[j].Path })
	// A failed key is not in Kept (fleet.ReapResult), but may be in
	// Removed: a key removed whose key dir in the transcripts dir could
	// not then be read. Each key is one entry.
	sum.Entries = sum.Removed + sum.Kept + len(res.Gone)
	for key := range res.Skipped {
		if !slices.Contains(res.Removed, key) {
			sum.Entries++
		}
	}
	sum.Keys = sum.Entries
	sum.Entries += len(res.NotKeys)
	return actions, sum
}
