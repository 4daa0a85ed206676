package main

import (
	"fmt"
	"io"
)

// writeReapText writes one line per action and a summary line.
func writeReapText(w io.Writer, actions []reapAction, s reapSummary) error {
	removed, reaped, finished, restored := "removed", "reaped", "finished", "restored"
	if s.DryRun {
		removed, reaped, finished, restored = "would remove", "would reap", "would finish", "would restore"
	}
	for _, a := range actions {
		verb, what := removed, ""
		switch a.Action {
		case reapRemoveKey:
			what = "expired key"
		case reapRefuseKey:
			verb, what = "not removed", *a.Detail
		case reapRemoveTemp:
			what = "stray temp file"
		case reapOrphan:
			what = "orphan: no record needs it"
		case reapFinish:
			verb, what = finished, "an interrupted reap of "+*a.Key+": its dir removed"
		case reapRestore:
			verb, what = restored, "moved back to "+*a.Key+": a promotion landed in it after its reap was interrupted"
		case reapSkip:
			verb, what = "skipped", *a.Detail
		case reapFail:
			verb, what = "failed", *a.Detail
		}
		if _, err := fmt.Fprintf(w, "%-12s  %s  (%s)\n", verb, printable(a.Path), printable(what)); err != nil {
			return err
		}
	}
	orphans := ""
	if s.Orphans > 0 {
		orphans = ", " + plural(s.Orphans, "orphan")
	}
	_, err := fmt.Fprintf(w, "%s %s%s and %s; kept %s, skipped %d", reaped,
		plural(s.Removed, "key"), orphans, plural(s.Swept, "temp file"), plural(s.Kept, "key"), s.Skipped)
	for _, part := range []struct {
		n    int
		what string
	}{{s.Refused, "not removed"}, {s.Finished, finished}, {s.Restored, restored}, {s.Failed, "failed"}} {
		if err == nil && part.n > 0 {
			_, err = fmt.Fprintf(w, ", %s %d", part.what, part.n)
		}
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
