package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sessdb/store"
)

// statsMap is stats --json's object as a map, its walk's time dropped.
func statsMap(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	delete(m, "walk_seconds")
	return m
}

// The shipped sample's stats as a sessions root, before `migrate --to
// etcd`, and the fleet's after agree on every figure that means the same
// on both: the entries and keys, every verdict, every promotion by
// outcome, start and run with its bytes, every distribution and the
// transcripts' bytes, in --json and --prometheus, for a day's window and
// one that holds every history entry. They differ where a fleet is
// another store: its keys' layout is etcd (as many as the root's keys of
// every layout), and its metadata is what etcd holds for the records and
// histories, where the root's is its meta.db files. The sample's
// README.txt, a name in the root but no record, is removed first, as
// TestFleetOutputMatchesTheRoot removes it. Before, stats on the fleet's
// environment exited 2: it did not run on a fleet.
func TestStatsOnAFleetMatchesTheRootItWasMovedFrom(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	if err := os.Remove(filepath.Join(root, "README.txt")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "migrate", root); code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	windows := [][]string{{}, {"--since", "10000h"}, {"--at", "2026-11-29T20:00:00Z"}}
	onRoot := map[string]string{}
	for _, w := range windows {
		for _, form := range []string{"--json", "--prometheus"} {
			args := append([]string{"stats", form}, w...)
			code, out, errs := runCLI(t, append(args, root)...)
			if code != exitOK || errs != "" {
				t.Fatalf("%v on the root: exit %d\n%s%s", args, code, out, errs)
			}
			onRoot[strings.Join(args, " ")] = out
		}
	}
	f := startFleet(t)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != 5 {
		t.Fatalf("--to etcd = %+v, want 5 keys migrated", sum)
	}
	for _, w := range windows {
		args := append([]string{"stats", "--json"}, w...)
		code, out, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%v on the fleet: exit %d\n%s%s", args, code, out, errs)
		}
		r, g := statsMap(t, onRoot[strings.Join(args, " ")]), statsMap(t, out)
		// The layouts: every key of the root's is etcd on the fleet.
		var rootKeys float64
		for _, l := range r["layouts"].([]any) {
			l := l.(map[string]any)
			if l["layout"] == "etcd" && l["keys"] != 0.0 {
				t.Errorf("%v: the root counts %v keys of layout etcd", args, l["keys"])
			}
			rootKeys += l["keys"].(float64)
		}
		for _, l := range g["layouts"].([]any) {
			l := l.(map[string]any)
			if want := map[bool]float64{true: rootKeys, false: 0}[l["layout"] == "etcd"]; l["keys"] != want {
				t.Errorf("%v: the fleet counts %v keys of layout %v; want %v", args, l["keys"], l["layout"], want)
			}
		}
		rd, gd := r["disk"].(map[string]any), g["disk"].(map[string]any)
		if rd["etcd_bytes"] != 0.0 || rd["meta_db_bytes"].(float64) <= 0 || gd["meta_db_bytes"] != 0.0 || gd["legacy_bytes"] != 0.0 || gd["etcd_bytes"].(float64) <= 0 {
			t.Errorf("%v: disk %v on the root, %v on the fleet; want etcd_bytes 0 and meta.db's on the root, etcd's alone on the fleet", args, rd, gd)
		}
		if rd["transcript_bytes"] != gd["transcript_bytes"] || gd["transcript_bytes"].(float64) <= 0 {
			t.Errorf("%v: transcript_bytes %v on the root, %v on the fleet", args, rd["transcript_bytes"], gd["transcript_bytes"])
		}
		delete(r, "layouts")
		delete(g, "layouts")
		delete(r, "disk")
		delete(g, "disk")
		if !reflect.DeepEqual(r, g) {
			rj, _ := json.Marshal(r)
			gj, _ := json.Marshal(g)
			t.Errorf("%v differs:\nroot  %s\nfleet %s", args, rj, gj)
		}
		if p := g["promotions"].(map[string]any); p["entries"] == 0.0 || g["keys"] != 5.0 {
			t.Errorf("%v: nothing counted on the fleet: %v", args, g)
		}
		// The metrics: the same series and values, but the layouts' and
		// the metadata's, and they parse as the JSON says.
		args[1] = "--prometheus"
		code, prom, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%v on the fleet: exit %d\n%s%s", args, code, prom, errs)
		}
		same := func(out string) string {
			var keep []string
			for _, l := range strings.Split(out, "\n") {
				if !strings.HasPrefix(l, "sessdb_keys{") && !strings.HasPrefix(l, "sessdb_meta_bytes{") && !strings.HasPrefix(l, "sessdb_stats_walk_seconds ") {
					keep = append(keep, l)
				}
			}
			return strings.Join(keep, "\n")
		}
		if rp := onRoot[strings.Join(args, " ")]; same(rp) != same(prom) {
			t.Errorf("%v differs:\n--- root\n%s\n--- fleet\n%s", args, same(rp), same(prom))
		}
		if len(w) > 0 && w[0] == "--since" {
			var s statsJSON
			json.Unmarshal([]byte(out), &s)
			checkStatsProm(t, prom, s)
		}
	}
	// The report says it is a fleet's, and what its metadata is; a
	// record at a name that is no key is named where it is.
	if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/record/not-a-key", "{}"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "stats")
	if code != exitOK || errs != "" || !strings.HasPrefix(out, "sessdb stats on a fleet at ") ||
		!strings.Contains(out, "etcd records and histories") || strings.Contains(out, "meta.db") || !strings.Contains(out, "keys         5  etcd 5\n") ||
		!strings.Contains(out, "  not keys   1  names in etcd that are not a key\n") {
		t.Errorf("stats on the fleet: exit %d\n%s%s", code, out, errs)
	}
}

// stats on a fleet whose etcd does not answer, or whose transcripts dir's
// storage failed, is a fault as dump's walk is: exit 1, nothing on
// stdout, the same cause on stderr.
func TestStatsOnAFleetThatDoesNotAnswerFailsAsDump(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://"+closedPort(t))
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "300ms")
	_, _, dumpErrs := runCLI(t, "dump", "--log-format", "console")
	for _, args := range [][]string{{"stats"}, {"stats", "--json"}, {"stats", "--prometheus"}} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitFault || out != "" || !strings.Contains(errs, "etcd unavailable") ||
			strings.TrimPrefix(errs, "sessdb stats: ") != strings.TrimPrefix(dumpErrs, "sessdb dump: ") {
			t.Errorf("%v with etcd not answering: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, dump's error %q", args, code, out, errs, dumpErrs)
		}
	}
}

// Ctrl-C (SIGTERM, SIGHUP) stops a stats of a fleet as it stops a root's:
// the figures of what was read, marked interrupted in every format, exit
// 130. Stopped before anything is read (here, while it connects or at
// once after), that is no entry; stopped after the first key reported,
// at least that key and not all of them.
func TestStatsOnAFleetInterrupted(t *testing.T) {
	f := startFleet(t)
	// More keys than the walk may start before the first is reported
	// (its window, 8 a worker, 4 workers at most): a walk whose keys'
	// records are read in one batch (af37b5f) had all of 16 started, and
	// so finished, before a loaded machine reported the first.
	const n = 8*4 + 8
	for i := range n {
		f.run(t, store.Key("github", "stats-interrupted", strconv.Itoa(i)), "job-"+strconv.Itoa(i))
	}
	prev := interruptContext
	t.Cleanup(func() { interruptContext = prev })
	interruptContext = cancelledContext
	for args, mark := range map[string]string{
		"stats":              "INTERRUPTED: the figures cover only the 0 entries read",
		"stats --json":       `"interrupted":true`,
		"stats --prometheus": "\nsessdb_stats_interrupted 1\n",
	} {
		code, out, errs := runCLI(t, strings.Fields(args)...)
		if code != exitInterrupted || !strings.Contains(out, mark) || !strings.Contains(errs, "interrupted after 0 entries") {
			t.Errorf("%s on a fleet, interrupted at once: exit %d\n%s%s", args, code, out, errs)
		}
	}
	// Stopped as the progress line shows the first key.
	c, cancel := context.WithCancel(context.Background())
	interruptContext = func() (context.Context, context.CancelFunc) { return c, cancel }
	forceProgress = true
	t.Cleanup(func() { forceProgress = false })
	w := &cancelOnWrite{mark: "stats 1/", cancel: cancel}
	var out strings.Builder
	code := run([]string{"stats", "--json", "--log-format", "console"}, &out, w)
	var s statsJSON
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil || code != exitInterrupted || !s.Interrupted || s.Keys < 1 || s.Keys >= n || s.Entries != s.Keys {
		t.Errorf("stats on a fleet interrupted after its first key: exit %d, %+v, %v\n%s%s", code, s, err, out.String(), w.buf.String())
	}
}

// Which store stats counts when a sessions root and a fleet are both
// named: a fleet flag given on the command line beside a root is refused,
// exit 2, naming both, as every command refuses the two; a fleet that is
// all the environment's leaves the root counted, and says so (kept from
// when stats did not run on a fleet); with no root, the fleet.
func TestStatsGivenARootAndAFleet(t *testing.T) {
	f := startFleet(t)
	f.run(t, store.Key("github", "stats-both", "a"), "job-a")
	atSampleTime(t) // clears the environment
	root := copySample(t)
	endpoints := f.c.Endpoints()[0]
	env := func(kv ...string) {
		clearEnv(t)
		for i := 0; i < len(kv); i += 2 {
			t.Setenv(kv[i], kv[i+1])
		}
	}
	for _, c := range []struct {
		env  []string
		args []string
		want []string
	}{
		{nil, []string{"--etcd-endpoints", endpoints, "--transcripts-dir", f.dir, root}, []string{"the DIR argument", "--etcd-endpoints"}},
		{[]string{"PI_SESSIONS_DIR", root}, []string{"--etcd-endpoints", endpoints, "--transcripts-dir", f.dir}, []string{"PI_SESSIONS_DIR", "--etcd-endpoints"}},
		{[]string{"PI_SESSIONS_ETCD_ENDPOINTS", endpoints}, []string{"--transcripts-dir", f.dir, "--sessions-dir", root}, []string{"--sessions-dir", "--transcripts-dir"}},
	} {
		env(c.env...)
		code, out, errs := runCLI(t, append([]string{"stats", "--log-format", "console"}, c.args...)...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "not both") {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want exit 2, one line", c.env, c.args, code, brief(out), errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v %v: stderr %q does not name %s", c.env, c.args, errs, w)
			}
		}
	}
	// The fleet's variables and a root: the root's figures, said so.
	env("PI_SESSIONS_ETCD_ENDPOINTS", endpoints, "PI_SESSIONS_TRANSCRIPTS_DIR", f.dir, "PI_SESSIONS_ETCD_PREFIX", f.prefix)
	code, out, errs := runCLI(t, "stats", "--json", "--log-format", "console", root)
	if code != exitOK || !strings.Contains(errs, "not the fleet's") || statsMap(t, out)["keys"] != 5.0 {
		t.Errorf("the fleet's variables and DIR: exit %d, stderr %q\n%s; want the root's 5 keys and a note", code, errs, out)
	}
	// A root given that cannot be read (a PI_SESSIONS_DIR left from a
	// root since removed) has no figures: its error alone, no note that
	// these are its figures. Before, the note came first: "these are the
	// figures of the sessions root …", then "open …: no such file".
	env("PI_SESSIONS_ETCD_ENDPOINTS", endpoints, "PI_SESSIONS_TRANSCRIPTS_DIR", f.dir, "PI_SESSIONS_ETCD_PREFIX", f.prefix, "PI_SESSIONS_DIR", filepath.Join(root, "gone"))
	code, out, errs = runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitFault || out != "" || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "figures") || !strings.Contains(errs, "gone") {
		t.Errorf("the fleet's variables and a root that is gone: exit %d, stdout %q, stderr %q; want exit 1, the root's error alone", code, brief(out), errs)
	}
	env("PI_SESSIONS_ETCD_ENDPOINTS", endpoints, "PI_SESSIONS_TRANSCRIPTS_DIR", f.dir, "PI_SESSIONS_ETCD_PREFIX", f.prefix)
	// And none: the fleet's one key.
	code, out, errs = runCLI(t, "stats", "--json", "--log-format", "console")
	if code != exitOK || errs != "" || statsMap(t, out)["keys"] != 1.0 {
		t.Errorf("the fleet's variables alone: exit %d, stderr %q\n%s; want the fleet's one key", code, errs, out)
	}
}
