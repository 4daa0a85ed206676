package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"sessdb/store"
)

var cmdReap = &command{
	name:  "reap",
	usage: "reap [--ttl-days N] [--dry-run] [--json] [DIR]",
	short: "remove keys whose last promotion is older than the TTL, and stray temp files older than an hour, each under its key's lock",
	run:   runReap,
}

const reapExample = `  sessdb reap --dry-run /var/lib/pi/sessions
  PI_SESSIONS_TTL_DAYS=30 sessdb reap /var/lib/pi/sessions
  sessdb reap --json /var/lib/pi/sessions | jq -r 'select(.action == "remove-key") | .path'`

// reapAction is one line of reap --json: what was (or, with --dry-run,
// would be) removed, or left alone and why.
type reapAction struct {
	Action string `json:"action"` // remove-key, remove-temp, skip
	Path   string `json:"path"`   // relative to the root
	DryRun bool   `json:"dry_run"`
	Detail string `json:"detail,omitempty"` // why a name was skipped
}

// reapSummary is the last line of reap --json.
type reapSummary struct {
	Summary struct {
		Removed     int  `json:"removed"`
		Swept       int  `json:"swept"`
		Kept        int  `json:"kept"`
		Skipped     int  `json:"skipped"`
		TTLDays     int  `json:"ttl_days"`
		DryRun      bool `json:"dry_run"`
		Interrupted bool `json:"interrupted"`
	} `json:"summary"`
}

func runReap(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("reap", stderr)
	setUsage(fs, "reap", reapExample)
	cfg := bindConfig(fs)
	dryRun := fs.Bool("dry-run", false, "remove nothing; print what would be removed")
	asJSON := fs.Bool("json", false, "one JSON object per action, then a summary object (fields: docs/OPERATIONS.md)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		return usageError(stderr, "reap", fmt.Errorf("unexpected argument %s", brief(fs.Arg(1))))
	}
	st, log, code := openStore(cfg, "reap", fs.Arg(0), stderr)
	if st == nil {
		return code
	}
	if err := checkWalkRoot(st.Root()); err != nil {
		return usageError(stderr, "reap", err)
	}
	b, _ := cfg.bounds(os.Getenv) // already parsed without error by openWalkStore
	ttlDays := int(b.TTL.Hours() / 24)
	if ttlDays == 0 {
		log.Warn().Msg("the TTL is 0: no key expires; only stray temp files are removed")
	}

	ctx, stop := interruptContext()
	defer stop()
	prog := progressTo(stderr, "reap")
	res, err := st.ReapWith(ctx, store.ReapOptions{DryRun: *dryRun, Progress: prog.report()})
	prog.clear()
	interrupted := err != nil && ctx.Err() != nil
	done := len(res.Removed) + res.Kept + len(res.Skipped)

	var actions []reapAction
	for _, k := range res.Removed {
		actions = append(actions, reapAction{Action: "remove-key", Path: k, DryRun: *dryRun})
	}
	for _, t := range res.Swept {
		actions = append(actions, reapAction{Action: "remove-temp", Path: t, DryRun: *dryRun})
	}
	skipped := make([]string, 0, len(res.Skipped))
	for name := range res.Skipped {
		skipped = append(skipped, name)
	}
	sort.Strings(skipped)
	for _, name := range skipped {
		actions = append(actions, reapAction{Action: "skip", Path: name, Detail: res.Skipped[name]})
	}
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Path < actions[j].Path })

	w := bufio.NewWriter(stdout)
	var sum reapSummary
	sum.Summary.Removed, sum.Summary.Swept, sum.Summary.Kept, sum.Summary.Skipped = len(res.Removed), len(res.Swept), res.Kept, len(res.Skipped)
	sum.Summary.TTLDays, sum.Summary.DryRun, sum.Summary.Interrupted = ttlDays, *dryRun, interrupted
	if *asJSON {
		enc := json.NewEncoder(w)
		for _, a := range actions {
			enc.Encode(a)
		}
		enc.Encode(sum)
	} else {
		writeReapText(w, actions, sum, *dryRun)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return walkEnd(stderr, "reap", err, done)
}

// writeReapText writes one line per action and a summary line.
func writeReapText(w io.Writer, actions []reapAction, sum reapSummary, dryRun bool) {
	removed, reaped := "removed", "reaped"
	if dryRun {
		removed, reaped = "would remove", "would reap"
	}
	for _, a := range actions {
		verb, what := removed, a.Detail
		switch a.Action {
		case "remove-key":
			what = "expired key"
		case "remove-temp":
			what = "stray temp file"
		default:
			verb = "skipped"
		}
		fmt.Fprintf(w, "%-12s  %s  (%s)\n", verb, printable(a.Path), printable(what))
	}
	s := sum.Summary
	fmt.Fprintf(w, "%s %s and %s; kept %s, skipped %d (TTL %d days)", reaped,
		plural(s.Removed, "key"), plural(s.Swept, "temp file"), plural(s.Kept, "key"), s.Skipped, s.TTLDays)
	if s.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintln(w)
}
