package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/sample"
	"sessdb/store"
)

// The keys of the walked fleet.
var (
	fleetResumable = store.Key("github", "acme/fleet", "pi/resumable")
	fleetExpired   = store.Key("github", "acme/fleet", "pi/expired")
	fleetMissing   = store.Key("github", "acme/fleet", "pi/missing")
	fleetChanged   = store.Key("github", "acme/fleet", "pi/changed")
	fleetGrown     = store.Key("github", "acme/fleet", "pi/grown")
	fleetNoRecord  = store.Key("github", "acme/fleet", "pi/no-record")
)

// fleetNow is when the walked fleet is judged: an hour after the
// sample's clock, as the key dirs' golden files are.
var fleetNow = sample.Time.Add(time.Hour)

// walkedFleet builds a fleet on a fixed clock: a key promoted twice (its
// first generation superseded 2 hours before fleetNow), one promoted 20
// days before (expired at the default TTL), one whose generation file is
// gone, one whose file was edited in place (same size), one whose file
// grew; and, planted in the transcripts dir, a generation of a key with
// no record (5 hours old), a dead write's temp, a young orphan (inside
// the grace period: not reported), a file the fleet does not write and a
// directory that is no key.
func walkedFleet(t *testing.T) *testFleet {
	t.Helper()
	f := startFleet(t)
	prev := clock
	t.Cleanup(func() { clock = prev })
	at := func(d time.Duration) { clock = func() time.Time { return sample.Time.Add(d) } }
	promoted := func(key, job string, d time.Duration) string {
		at(d)
		p := f.run(t, key, job)
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl"))
		for _, file := range files {
			if strings.Contains(filepath.Base(file), strings.Repeat("0", 15)+string(rune('0'+p.Gen))+"-") {
				then := sample.Time.Add(d)
				os.Chtimes(file, then, then)
				return file
			}
		}
		t.Fatalf("no file of %s gen %d in %v", key, p.Gen, files)
		return ""
	}
	first := promoted(fleetResumable, "r1", -3*time.Hour)
	promoted(fleetResumable, "r2", -2*time.Hour)
	promoted(fleetExpired, "e1", -20*24*time.Hour)
	os.Remove(promoted(fleetMissing, "m1", -time.Hour))
	changed := promoted(fleetChanged, "c1", -time.Hour)
	b, _ := os.ReadFile(changed)
	os.WriteFile(changed, []byte(strings.Replace(string(b), `"content":"c1"`, `"content":"C1"`, 1)), 0o600)
	grown := promoted(fleetGrown, "g1", -time.Hour)
	b, _ = os.ReadFile(grown)
	os.WriteFile(grown, append(b, '\n'), 0o600)
	for _, p := range []string{changed, grown} {
		then := sample.Time.Add(-time.Hour)
		os.Chtimes(p, then, then)
	}
	clock = func() time.Time { return fleetNow }

	plant := func(name string, age time.Duration) {
		p := filepath.Join(f.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(header), 0o600); err != nil {
			t.Fatal(err)
		}
		then := fleetNow.Add(-age)
		os.Chtimes(p, then, then)
	}
	plant(fleetNoRecord+"/0000000000000001-00000000deadbeef.jsonl", 5*time.Hour)
	plant(fleetNoRecord+"/0000000000000002-00000000feedf00d.jsonl", 10*time.Minute) // young
	plant(fleetResumable+"/.tmp-00c0ffee00c0ffee", 3*time.Hour)
	plant(fleetResumable+"/notes.txt", 3*time.Hour)
	os.MkdirAll(filepath.Join(f.dir, "lost+found"), 0o700)
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the superseded generation: %v", err)
	}
	return f
}

// randomName matches the random part of a generation file's name.
var randomName = regexp.MustCompile(`([0-9a-f]{16})-[0-9a-f]{16}\.jsonl`)

// dump, check, reap and stats on a fleet, as tables and as JSON, against golden
// files: the same columns and objects as on a sessions root, the verdict a
// job matching each key's stamps would get, the findings of a missing, an
// edited and a grown generation, an orphan, a dead write, a file and a
// name that are not the fleet's; check --repair removing the orphans
// only, under each key's lock; reap removing the expired key.
func TestFleetGolden(t *testing.T) {
	f := walkedFleet(t)
	steps := []struct {
		golden string
		args   []string
		code   int
	}{
		{"fleet-dump.txt", []string{"dump"}, exitOK},
		{"fleet-dump-verify-wide.txt", []string{"dump", "--verify", "--wide"}, exitOK},
		{"fleet-dump.jsonl", []string{"dump", "--json", "--verify"}, exitOK},
		{"fleet-dump-as-job.txt", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "podman"}, exitOK},
		{"fleet-check.txt", []string{"check"}, exitIssues},
		{"fleet-check.jsonl", []string{"check", "--json"}, exitIssues},
		{"fleet-reap-dry-run.txt", []string{"reap", "--dry-run"}, exitOK},
		{"fleet-reap-dry-run.jsonl", []string{"reap", "--dry-run", "--json"}, exitOK},
		{"fleet-stats.txt", []string{"stats", "--since", "168h"}, exitOK},
		{"fleet-stats.json", []string{"stats", "--json", "--since", "168h"}, exitOK},
		{"fleet-check-repair.txt", []string{"check", "--repair"}, exitIssues},
		{"fleet-reap.txt", []string{"reap"}, exitOK},
		{"fleet-dump-after.txt", []string{"dump"}, exitOK},
	}
	for _, s := range steps {
		code, out, errs := runCLI(t, s.args...)
		if code != s.code {
			t.Fatalf("%v: exit %d, want %d\n%s%s", s.args, code, s.code, out, errs)
		}
		golden(t, s.golden, randomName.ReplaceAllString(out, "${1}-RANDOM.jsonl"))
	}
	// What the repair and the reap left: every record's file, the young
	// orphan, the file and the name that are not the fleet's.
	var left []string
	filepath.Walk(f.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(f.dir, p)
			left = append(left, randomName.ReplaceAllString(rel, "${1}-RANDOM.jsonl"))
		}
		return nil
	})
	want := []string{
		shared.MarkName, // its first promotion marked it
		fleetChanged + "/0000000000000001-RANDOM.jsonl",
		fleetGrown + "/0000000000000001-RANDOM.jsonl",
		fleetNoRecord + "/0000000000000002-RANDOM.jsonl",
		fleetResumable + "/0000000000000002-RANDOM.jsonl",
		fleetResumable + "/notes.txt",
	}
	sort.Strings(want)
	if strings.Join(left, "\n") != strings.Join(want, "\n") {
		t.Errorf("the transcripts dir holds\n%s\nwant\n%s", strings.Join(left, "\n"), strings.Join(want, "\n"))
	}
}

// The findings and verdicts the golden files show, asserted one by one:
// each fault is found where it is, named as the key dir's check names it.
func TestFleetWalksFindEachFault(t *testing.T) {
	f := walkedFleet(t)
	code, out, errs := runCLI(t, "check", "--json")
	if code != exitIssues {
		t.Fatalf("check: exit %d\n%s%s", code, out, errs)
	}
	kinds := map[string]string{} // path (random part hidden) -> kind
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var fd struct{ Path, Kind, Severity string }
		json.Unmarshal([]byte(l), &fd)
		if fd.Path != "" {
			kinds[randomName.ReplaceAllString(fd.Path, "${1}")] = fd.Kind + "/" + fd.Severity
		}
	}
	for path, want := range map[string]string{
		fleetMissing + "/0000000000000001":        "transcript-mismatch/problem",
		fleetChanged + "/0000000000000001":        "transcript-mismatch/problem",
		fleetGrown + "/0000000000000001":          "transcript-mismatch/problem",
		fleetNoRecord + "/0000000000000001":       "orphan/notice",
		fleetResumable + "/0000000000000001":      "orphan/notice",
		fleetResumable + "/.tmp-00c0ffee00c0ffee": "orphan/notice",
		fleetResumable + "/notes.txt":             "unknown-entry/notice",
		"lost+found":                              "not-a-key/notice",
	} {
		if kinds[path] != want {
			t.Errorf("%s: %q, want %s", path, kinds[path], want)
		}
		delete(kinds, path)
	}
	if len(kinds) != 0 {
		t.Errorf("findings no fault explains (the young orphan, a healthy key?): %v", kinds)
	}

	_, out, _ = runCLI(t, "dump", "--json", "--verify")
	verdicts := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Key     string
			Verdict *struct {
				Reason    string
				IfMatched string `json:"if_matched"`
			}
		}
		json.Unmarshal([]byte(l), &e)
		if e.Verdict != nil {
			verdicts[e.Key] = e.Verdict.Reason + e.Verdict.IfMatched
		}
	}
	for key, want := range map[string]string{
		fleetResumable: "?resumed", fleetExpired: "expired", fleetMissing: "transcript-replaced",
		fleetChanged: "?transcript-replaced", fleetGrown: "?transcript-replaced",
	} {
		if verdicts[key] != want {
			t.Errorf("dump verdict of %s: %q, want %q", key, verdicts[key], want)
		}
	}
	// What dump says a job would get is what a job gets.
	for key, want := range map[string]string{fleetResumable: "resumed", fleetExpired: "expired", fleetMissing: "transcript-replaced", fleetChanged: "transcript-replaced", fleetGrown: "transcript-replaced"} {
		if r, _ := f.resolve(t, key, "judge-"+key[:8]); r.Reason != want {
			t.Errorf("resolve of %s: %s, want %s as dump said", key, r.Reason, want)
		}
	}
}
