package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/fleet"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A fleet's reap summary counts a key reap could not handle as a sessions
// root's does: failed, not kept (docs/json.md reap.summary; fleet.Reap
// counts it in Skipped, never in Kept), and an entry and a key. Before,
// the fleet's summary left it out of entries and keys, and fleet.Reap had
// counted it in kept too.
func TestFleetReapSummaryCountsAFailedKeyAsTheRootDoes(t *testing.T) {
	old, fresh := store.Key("github", "reap", "old"), store.Key("github", "reap", "fresh")
	_, onFleet := fleetReapActions(fleet.ReapResult{Kept: 1, Skipped: map[string]error{old: errors.New("injected")}}, "/t", false)
	_, onRoot := reapActions(store.ReapResult{Kept: 1, Skipped: map[string]string{old: "injected"}, Failed: []string{old}}, "/r", false)
	if onFleet != onRoot || onFleet.Kept != 1 || onFleet.Failed != 1 {
		t.Errorf("one key kept (%s), one failed (%s): on a fleet %+v, on a root %+v", fresh, old, onFleet, onRoot)
	}
}

// A key reap removed whose key dir in the transcripts dir it then could
// not read (fleet.Reap reports it in Removed and in Skipped) is one entry
// and one key, as docs/json.md's reap.summary counts names.
func TestFleetReapSummaryCountsARemovedAndFailedKeyOnce(t *testing.T) {
	old := store.Key("github", "reap", "old")
	for _, dry := range []bool{false, true} {
		_, sum := fleetReapActions(fleet.ReapResult{Removed: []string{old}, Skipped: map[string]error{old: errors.New("open: permission denied")}}, "/t", dry)
		if sum.Entries != 1 || sum.Keys != 1 || sum.Removed != 1 || sum.Failed != 1 {
			t.Errorf("dry run %v: %+v; want one entry and one key, removed and failed", dry, sum)
		}
	}
}

// A key another removed between a fleet reap's listing and its delete
// (fleet.ReapResult.Gone) is reported and counted as a sessions root's
// reap reports a key dir another reap removed under it: skip, with why,
// an entry and a key, neither kept nor failed, exit 0. Before, the fleet's
// summary left it out: no action, and neither an entry nor a key.
func TestFleetReapReportsAKeyRemovedByAnotherAsTheRootDoes(t *testing.T) {
	gone, kept := store.Key("github", "reap", "gone"), store.Key("github", "reap", "kept")
	acts, onFleet := fleetReapActions(fleet.ReapResult{Kept: 1, Gone: []string{gone}}, "/t", false)
	_, onRoot := reapActions(store.ReapResult{Kept: 1, Skipped: map[string]string{gone: "open " + gone + ": no such file or directory"}}, "/r", false)
	if onFleet != onRoot || onFleet.Skipped != 1 || onFleet.Keys != 2 || onFleet.Failed != 0 {
		t.Errorf("one key kept (%s), one removed by another (%s): on a fleet %+v, on a root %+v", kept, gone, onFleet, onRoot)
	}
	if len(acts) != 1 || acts[0].Action != reapSkip || acts[0].Key == nil || *acts[0].Key != gone || acts[0].Detail == nil || !strings.Contains(*acts[0].Detail, "removed by another") {
		t.Errorf("actions %+v; want one skip of %s saying another removed it", acts, gone)
	}
}

// A name under a fleet's records that is no key (a hand-written etcd key)
// is left alone and reported as a sessions root's reap reports a name
// that is no key: skip, "not a key", no key, an entry but not a key, exit
// 0; its path is its etcd key, as check names it. Before, the fleet counted it a kept key.
func TestFleetReapSkipsARecordNameThatIsNoKey(t *testing.T) {
	f := startFleet(t)
	f.run(t, store.Key("github", "reap", "kept"), "1")
	if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/record/not-a-key", "x"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "reap", "--json", "--ttl-days", "14")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var a reapAction
	var s struct{ Summary reapSummary }
	if code != exitOK || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &a) != nil || json.Unmarshal([]byte(lines[1]), &s) != nil {
		t.Fatalf("exit %d, %s%s; want exit 0, one action and the summary", code, out, errs)
	}
	if a.Action != reapSkip || a.Key != nil || a.Path != f.prefix+"/record/not-a-key" || a.Detail == nil || *a.Detail != "not a key" {
		t.Errorf("action %s; want skip, its etcd key (check's path), no key, detail \"not a key\"", lines[0])
	}
	if sum := s.Summary; sum.Entries != 2 || sum.Keys != 1 || sum.Kept != 1 || sum.Skipped != 1 || sum.Failed != 0 {
		t.Errorf("summary %s; want 2 entries, 1 key kept, 1 name skipped", lines[1])
	}
}

// A fleet reap that loses etcd after it removed a key fails (exit 1,
// nothing on stdout, as every failed command), and names on stderr what
// it removed before it stopped: that key and its transcript are gone for
// good. It said only "etcd unavailable", so the operator could not tell
// that anything was removed, nor which key.
func TestFleetReapThatStopsNamesWhatItRemoved(t *testing.T) {
	prev := clock
	t.Cleanup(func() { clock = prev })
	keys := []string{store.Key("github", "reap-stop", "a"), store.Key("github", "reap-stop", "b")}
	slices.Sort(keys)
	var code int
	var out, errs string
	untilTheFault(t, func() bool {
		f := startFleet(t)
		clock = func() time.Time { return fleetNow.Add(-20 * 24 * time.Hour) }
		for i, k := range keys {
			f.run(t, k, "j"+strconv.Itoa(i))
		}
		files, _ := filepath.Glob(filepath.Join(f.dir, keys[0], "*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("the first key's files: %v", files)
		}
		// The member stops as reap judges the second key, once the
		// first's transcript is gone (reap reads its clock for each key
		// it judges).
		stopped := false
		clock = func() time.Time {
			if _, err := os.Stat(files[0]); !stopped && errors.Is(err, fs.ErrNotExist) {
				stopped = true
				f.c.Stop(0)
			}
			return fleetNow
		}
		code, out, errs = runCLI(t, "reap", "--etcd-timeout", "200ms", "--log-format", "console")
		if !stopped {
			t.Logf("reap: exit %d, stderr %q", code, errs)
		}
		return stopped
	})
	if code != exitFault || out != "" || !strings.Contains(errs, "etcd unavailable") {
		t.Fatalf("reap losing etcd after the first key: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "removed "+keys[0]+" before reap stopped") || strings.Contains(errs, "removed "+keys[1]) {
		t.Errorf("stderr %q: want the first key named as removed, and only it", errs)
	}
}

// untilTheFault runs scenario, a fresh fleet whose CLI command loses etcd
// part way, until it reports that the command reached its fault, three
// times at most. The command's short --etcd-timeout, which its wait
// after the fault costs, also bounds the requests before the fault; on a
// loaded machine the first of them, which dials etcd, can outlast it,
// and the command then stops before its fault: "etcd unavailable", as it
// would after it, with nothing to say about the removal under test.
func untilTheFault(t *testing.T, scenario func() (reached bool)) {
	t.Helper()
	for try := 1; !scenario(); try++ {
		if try == 3 {
			t.Fatalf("the command never reached its fault in %d tries", try)
		}
		t.Logf("try %d stopped before its fault (a loaded machine): again on a fresh fleet", try)
	}
}

// A check --repair that stops (a fleet's etcd lost mid-walk) printed only
// the error, as reap did before it named its removals: the orphans it had
// removed before the stop are gone for good and went unsaid. Each is named
// on stderr ('repaired PATH before check stopped: removed', the path as
// check's report gives it); stdout stays empty. One
// worker (GOMAXPROCS 1), two keys with an orphan each: the second key's
// lock is failed by etcd, after the first key's two transactions.
func TestFleetCheckRepairThatStopsNamesWhatItRemoved(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	keys := []string{store.Key("github", "repair-stop", "a"), store.Key("github", "repair-stop", "b")}
	slices.Sort(keys)
	var code int
	var out, errs string
	// The fault is reached once the first key's orphan is gone: the
	// second key's lock is what etcd fails.
	untilTheFault(t, func() bool {
		f := fleetOn(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}))
		markDir(t)
		var files []string
		for _, k := range keys {
			p := filepath.Join(f.dir, k, "0000000000000001-0123456789abcdef.jsonl")
			os.MkdirAll(filepath.Dir(p), 0o700)
			os.WriteFile(p, []byte(header), 0o600)
			old := time.Now().Add(-3 * time.Hour)
			os.Chtimes(p, old, old)
			files = append(files, p)
		}
		const txn = "/etcdserverpb.KV/Txn"
		// The fleet's ID made as the repair claims the dir, the first
		// key's lock and read go through.
		f.c.FailNext(txn, 3, 1000)
		defer f.c.FailNext(txn, 0, 0)
		code, out, errs = runCLI(t, "check", "--repair", "--etcd-timeout", "200ms", "--log-format", "console")
		_, err := os.Lstat(files[0])
		if !errors.Is(err, fs.ErrNotExist) {
			t.Logf("check --repair left the first key's orphan (%v): exit %d, stderr %q", err, code, errs)
			return false
		}
		return true
	})
	if code != exitFault || out != "" || !strings.Contains(errs, "etcd unavailable") {
		t.Fatalf("check --repair losing etcd at the second key: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "repaired "+keys[0]+"/0000000000000001-0123456789abcdef.jsonl before check stopped: removed") || strings.Contains(errs, "repaired "+keys[1]) {
		t.Errorf("stderr %q: want the first key's orphan named as removed, and only it", errs)
	}
}
