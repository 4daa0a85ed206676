package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/store"
)

// A transcripts dir whose export went stale (ESTALE at its stat, stood
// in for by the fault point) is the storage unavailable, not a
// configuration: resolve is the named cold start store-unavailable (exit
// 0, the cause on stderr once, naming the dir), promote promote-failed
// with the job's transcript kept, and dump, check, reap and stats faults
// (exit 1) naming the dir, nothing removed. Before: every command was a
// configuration error, exit 2 ("no transcripts dir"), so a job loop
// could not start the job cold.
func TestFleetStaleTranscriptsDirIsStoreUnavailable(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/stale-dir")
	f.run(t, key, "a")
	_, b := f.resolve(t, key, "b")
	appendAnswered(t, b, "b")
	faults.Set(func(p faults.Point) error {
		if p == faults.SharedDirStat {
			return unix.ESTALE
		}
		return nil
	})
	defer faults.Set(nil)

	dir := filepath.Join(f.jobs, "c")
	code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", dir, "--pi-version", "0.58.3", "--venue", "local")
	var r resolveOutput
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Resume || r.Reason != "store-unavailable" ||
		strings.Count(errs, "\n") != 1 || !strings.Contains(errs, f.dir) || !strings.Contains(errs, "stale file handle") {
		t.Errorf("resolve: exit %d, %s%s; want store-unavailable, the dir's cause once", code, out, errs)
	}
	code, out, errs = runCLI(t, "promote", "--job-dir", b, "--pi-version", "0.58.3")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Promoted || p.Reason != "promote-failed" || !strings.Contains(errs, f.dir) {
		t.Errorf("promote: exit %d, %s%s; want promote-failed naming the dir", code, out, errs)
	}
	for _, cmd := range [][]string{{"dump"}, {"check", "--repair"}, {"reap"}, {"stats"}} {
		code, _, errs := runCLI(t, cmd...)
		if code != exitFault || !strings.Contains(errs, f.dir) || !strings.Contains(errs, "stale file handle") {
			t.Errorf("%s: exit %d, %s; want exit 1 naming the dir", cmd[0], code, errs)
		}
	}
	faults.Set(nil)
	if p, errs := f.promote(t, b); !p.Promoted || p.Gen != 2 {
		t.Fatalf("the job's promotion once the dir is back: %+v\n%s", p, errs)
	}
}
