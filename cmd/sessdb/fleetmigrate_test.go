package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/fleet"
	"sessdb/store"
)

// migrate --to etcd moves a sessions root into a fleet and --from etcd
// moves it back: every key resumes the same bytes at the same generation
// on the other side, a re-run reports every key already, and the summary
// says which way it went.
func TestMigrateToAndFromEtcd(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	keys := []string{store.Key("github", "acme/widget", "pi/one"), store.Key("github", "acme/widget", "pi/two")}
	want := map[string]string{}
	for i, key := range keys {
		// Two generations for the first key, one for the second.
		for g := 0; g <= 1-i; g++ {
			job := t.TempDir()
			args := []string{"--sessions-dir", root, "--pi-version", "0.58.3"}
			code, out, errs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job}, args...)...)
			if code != exitOK {
				t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
			}
			appendAnswered(t, job, key)
			if code, out, errs = runCLI(t, append([]string{"promote", "--job-dir", job}, args...)...); code != exitOK || !strings.Contains(out, `"promoted":true`) {
				t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
			}
			b, _ := os.ReadFile(filepath.Join(job, store.StagedDirName, store.TranscriptName))
			want[key] = string(b)
		}
	}

	// The root was made before the environment names the fleet: a
	// resolve refuses both at once.
	f := startFleet(t)
	sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root)
	if sum.Direction != "to-etcd" || sum.Migrated != 2 || sum.Conflicts != 0 {
		t.Fatalf("--to etcd summary = %+v, want 2 migrated", sum)
	}
	if sum = migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Already != 2 || sum.Migrated != 0 {
		t.Fatalf("--to etcd again = %+v, want 2 already", sum)
	}
	for i, key := range keys {
		r, _ := f.resolve(t, key, fmt.Sprint("fleet-", i))
		got, _ := os.ReadFile(r.Staged)
		if !r.Resume || string(got) != want[key] {
			t.Fatalf("%s on the fleet: %+v, %d bytes; want the root's %d", key, r, len(got), len(want[key]))
		}
		code, out, errs := runCLI(t, "dump", "--json", "--key", key)
		if code != exitOK || !strings.Contains(out, fmt.Sprintf(`"gen":%d,`, 2-i)) {
			t.Fatalf("dump %s on the fleet: exit %d\n%s%s", key, code, out, errs)
		}
	}

	back := filepath.Join(t.TempDir(), "back")
	if err := os.Mkdir(back, 0o700); err != nil {
		t.Fatal(err)
	}
	if sum = migrateJSON(t, exitOK, "migrate", "--from", "etcd", "--json", back); sum.Direction != "from-etcd" || sum.Migrated != 2 {
		t.Fatalf("--from etcd summary = %+v, want 2 migrated", sum)
	}
	for _, key := range keys {
		got, err := os.ReadFile(filepath.Join(back, key, store.TranscriptName))
		if err != nil || string(got) != want[key] {
			t.Fatalf("%s back in a root: %v, %d bytes; want %d", key, err, len(got), len(want[key]))
		}
	}
	// A dry run changes nothing, and says so.
	empty := t.TempDir()
	if sum = migrateJSON(t, exitOK, "migrate", "--from", "etcd", "--dry-run", "--json", empty); !sum.DryRun || sum.Migrated != 2 {
		t.Fatalf("dry run = %+v", sum)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("a dry run wrote %d entries", len(ents))
	}
}

// migrateJSON runs a migrate with --json, wants exit code, and returns its
// summary.
func migrateJSON(t *testing.T, code int, args ...string) fleet.MigrateSummary {
	t.Helper()
	got, out, errs := runCLI(t, args...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s struct{ Summary *fleet.MigrateSummary }
	if got != code || json.Unmarshal([]byte(lines[len(lines)-1]), &s) != nil || s.Summary == nil {
		t.Fatalf("%q: exit %d (want %d)\n%s%s", args, got, code, out, errs)
	}
	return *s.Summary
}

// A fleet migration's bad invocations are refused before anything
// connects or is written, each with one line naming what is wrong.
func TestMigrateEtcdUsage(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	transcripts := t.TempDir()
	eps := "--etcd-endpoints=http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "consul", eps, "--transcripts-dir", transcripts, root}, "--to and --from take etcd"},
		{[]string{"--from", "disk", root}, "--to and --from take etcd"},
		{[]string{"--to", "etcd", "--from", "etcd", root}, "choose one"},
		{[]string{"--to", "etcd", "--to-legacy", root}, "choose one"},
		{[]string{"--to", "etcd", root}, "needs --etcd-endpoints"},
		{[]string{eps, "--transcripts-dir", transcripts, root}, "neither --to etcd nor --from etcd"},
	} {
		code, out, errs := runMigrateCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errs, c.want)
		}
	}
	// A fleet knob without endpoints is a configuration error, named.
	code, _, errs := runMigrateCLI(t, "--to", "etcd", "--transcripts-dir", transcripts, root)
	if code != exitUsage || !strings.Contains(errs, "--transcripts-dir") {
		t.Errorf("--transcripts-dir without endpoints: exit %d, %q", code, errs)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("a refused migrate wrote %d entries", len(ents))
	}
}

// A fleet's transcripts dir is a directory of its own, shared by every
// worker, never the sessions root a migration moves: given the root as
// the transcripts dir (PI_SESSIONS_TRANSCRIPTS_DIR left at the root's
// path, --transcripts-dir=ROOT, a link to it), --to etcd on a fleet with
// records marked the root as the fleet's dir (an unmarked dir of key dirs
// is one from before marks) and wrote each key's generation file there,
// beside its meta.db, under a record every other worker reads in the
// fleet's real dir, where the file is not: every migrated key's resolve a
// cold start. --from etcd would write key dirs into the fleet's dir. Each
// is a configuration error naming the knob, before anything is written.
func TestMigrateRefusesATranscriptsDirThatIsTheRootItMoves(t *testing.T) {
	root := rootOfOneKey(t, store.Key("github", "acme/widget", "pi/in-place"))
	names := func() []string { return treeNames(root) }
	before := names()

	f := startFleet(t) // a fleet with records: its own dir marked
	f.run(t, store.Key("github", "acme/widget", "pi/fleet"), "job-fleet")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  string // PI_SESSIONS_TRANSCRIPTS_DIR
		args []string
		name string // the knob the line names
		root string // the setting it names that gave the root
	}{
		{root, []string{"--to", "etcd", "--json", root}, "PI_SESSIONS_TRANSCRIPTS_DIR", "the DIR argument"},
		{root + "/", []string{"--to", "etcd", "--json", "--sessions-dir", root}, "PI_SESSIONS_TRANSCRIPTS_DIR", "--sessions-dir"},
		{f.dir, []string{"--to", "etcd", "--transcripts-dir=" + root, root}, "--transcripts-dir", "the DIR argument"},
		{link, []string{"--to", "etcd", root}, "PI_SESSIONS_TRANSCRIPTS_DIR", "the DIR argument"},
		{root, []string{"--from", "etcd", "--json", root}, "PI_SESSIONS_TRANSCRIPTS_DIR", "the DIR argument"},
		{root, []string{"--to", "etcd", "--dry-run", root}, "PI_SESSIONS_TRANSCRIPTS_DIR", "the DIR argument"},
	} {
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", c.env)
		code, out, errs := runMigrateCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) || !strings.Contains(errs, "the sessions root this migration moves ("+c.root+")") {
			t.Errorf("PI_SESSIONS_TRANSCRIPTS_DIR=%s migrate %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s and the sessions root this migration moves (%s)", c.env, c.args, code, out, errs, c.name, c.root)
		}
		if got := names(); !slices.Equal(got, before) {
			t.Fatalf("migrate %q changed the root: %q, was %q", c.args, got, before)
		}
	}
	// Without a fleet there is no transcripts dir to compare: a root
	// named "." (the working directory) is migrated as any other.
	for _, k := range []string{"PI_SESSIONS_ETCD_ENDPOINTS", "PI_SESSIONS_TRANSCRIPTS_DIR", "PI_SESSIONS_ETCD_PREFIX"} {
		t.Setenv(k, "")
	}
	t.Chdir(root)
	if code, out, errs := runMigrateCLI(t, "--dry-run", "."); code != exitOK {
		t.Errorf("migrate --dry-run . without a fleet: exit %d\n%s%s", code, out, errs)
	}
	// The fleet never got the key: with its own dir, the migration moves it.
	fleetOn(t, f.c)
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != 1 {
		t.Errorf("--to etcd into the fleet's own dir = %+v, want 1 migrated", sum)
	}
}

// rootOfOneKey makes a sessions root holding key, promoted once, with no
// fleet in the environment.
func rootOfOneKey(t *testing.T, key string) string {
	t.Helper()
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	args := []string{"--sessions-dir", root, "--pi-version", "0.58.3"}
	if code, out, errs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job}, args...)...); code != exitOK {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	appendAnswered(t, job, key)
	if code, out, errs := runCLI(t, append([]string{"promote", "--job-dir", job}, args...)...); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
	}
	return root
}

// treeNames is every path under dir, dir first, in lexical order.
func treeNames(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		out = append(out, p)
		return nil
	})
	return out
}

// A worker moved from a sessions root to a fleet whose transcripts dir is
// set to its old root (PI_SESSIONS_DIR's value kept under the new name)
// finds a dir of key dirs and no mark. A fleet with records took it for a
// dir from before marks: its first promote marked the old root as the
// fleet's dir and wrote the generation there, beside the key dirs'
// meta.db, under a record every other worker reads in the fleet's real
// dir, where the file is not (their resolves transcript-replaced), and
// the worker's own resolves of the fleet's keys cold-started as well. A
// key dir holding a sessions root's files (meta.db, current.jsonl) is no
// fleet's: the dir is refused as another store's, exit 2 naming the
// variable, by the writers and by the audits, nothing written.
func TestAFleetRefusesASessionsRootAsItsTranscriptsDir(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/old-root")
	root := rootOfOneKey(t, key)
	before := treeNames(root)
	f := startFleet(t) // a fleet with records: its own dir marked
	f.run(t, key, "job-fleet")

	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", root)
	r, job := f.resolve(t, key, "job-on-the-old-root")
	appendAnswered(t, job, "on the old root")
	code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "PI_SESSIONS_TRANSCRIPTS_DIR") || !strings.Contains(errs, "sessions root") {
		t.Errorf("promote onto the old root (resolved %s): exit %d, stdout %q, stderr %q; want exit 2, one line naming PI_SESSIONS_TRANSCRIPTS_DIR and the sessions root", r.Reason, code, out, errs)
	}
	for _, args := range [][]string{{"check", "--json"}, {"check", "--repair", "--json"}, {"reap", "--dry-run", "--json"}, {"reap", "--json"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_TRANSCRIPTS_DIR") || !strings.Contains(errs, "sessions root") {
			t.Errorf("%q on the old root: exit %d, stdout %q, stderr %q; want exit 2 naming PI_SESSIONS_TRANSCRIPTS_DIR and the sessions root", args, code, out, errs)
		}
	}
	if got := treeNames(root); !slices.Equal(got, before) {
		t.Errorf("the old root changed: %q, was %q", got, before)
	}
	// The fleet's own dir is still its dir, and its key resumes there.
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	if r, _ := f.resolve(t, key, "job-back"); !r.Resume {
		t.Errorf("resolve on the fleet's dir: %+v, want resumed", r)
	}
	// A fleet with records and no ID (from before IDs, or its ID deleted
	// as fleet.md says to make an empty dir its own) marks an unmarked
	// dir whatever it holds, but never a sessions root either.
	if _, err := f.c.Client(t).Delete(context.Background(), f.prefix+"/fleet"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", root)
	if code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "0.58.3"); code != exitUsage || out != "" || !strings.Contains(errs, "sessions root") {
		t.Errorf("promote onto the old root, the fleet without an ID: exit %d, stdout %q, stderr %q; want exit 2 naming the sessions root", code, out, errs)
	}
	if got := treeNames(root); !slices.Equal(got, before) {
		t.Errorf("the old root changed: %q, was %q", got, before)
	}
}

// The converse of TestAFleetRefusesASessionsRootAsItsTranscriptsDir: a
// sessions root named at a fleet's transcripts dir (a worker whose
// PI_SESSIONS_ETCD_ENDPOINTS was dropped and whose PI_SESSIONS_DIR names
// the shared mount; a DIR argument) resolved every fleet key absent and
// promoted into the fleet's key dirs, a meta.db and current.jsonl beside
// its generation files, which no fleet worker reads; check called the
// fleet's files unknown entries. The dir's mark says whose it is: every
// command that takes a sessions root refuses it, exit 2, naming the
// knob, nothing written.
func TestASessionsRootRefusesAFleetsTranscriptsDir(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/fleet-dir")
	f.run(t, key, "job-fleet")
	before := treeNames(f.dir)
	clearEnv(t)
	job := filepath.Join(t.TempDir(), "job")
	for _, c := range []struct {
		env  string // PI_SESSIONS_DIR
		args []string
		name string
	}{
		{f.dir, []string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3"}, "PI_SESSIONS_DIR"},
		{"", []string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--sessions-dir", f.dir + "/"}, "--sessions-dir"},
		{f.dir, []string{"promote", "--job-dir", job, "--pi-version", "0.58.3"}, "PI_SESSIONS_DIR"},
		{f.dir, []string{"dump", "--json"}, "PI_SESSIONS_DIR"},
		{"", []string{"dump", "--json", f.dir}, "DIR argument"},
		{f.dir, []string{"stats", "--json"}, "PI_SESSIONS_DIR"},
		{f.dir, []string{"check", "--repair", "--json"}, "PI_SESSIONS_DIR"},
		{"", []string{"reap", "--json", f.dir}, "DIR argument"},
		{f.dir, []string{"migrate", "--json"}, "PI_SESSIONS_DIR"},
		{f.dir, []string{"migrate", "--to-legacy", "--json"}, "PI_SESSIONS_DIR"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) || !strings.Contains(errs, "transcripts dir") {
			t.Errorf("PI_SESSIONS_DIR=%q %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s and the fleet's transcripts dir", c.env, c.args, code, out, errs, c.name)
		}
	}
	if _, err := os.Lstat(job); err == nil {
		t.Errorf("a refused resolve made the job dir")
	}
	if got := treeNames(f.dir); !slices.Equal(got, before) {
		t.Errorf("the fleet's dir changed: %q, was %q", got, before)
	}
}

// A transcripts dir inside a key dir of the sessions root migrate moves
// (its path, one through a link, or a dir deeper down) is refused as the
// root itself is: exit 2, one line naming the knob, the key dir and the
// root, nothing written. Before, --to etcd took it: it marked the dir and
// wrote the fleet's every generation file inside the key dir it leaves as
// the way back (check: unknown-entry; a quarantine of the key would move
// the fleet's transcripts aside with it).
func TestMigrateRefusesATranscriptsDirInsideAKeyDirOfTheRoot(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/in-a-key")
	root := rootOfOneKey(t, key)
	inKey := filepath.Join(root, key, "transcripts")
	deeper := filepath.Join(inKey, "deeper")
	if err := os.MkdirAll(deeper, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(inKey, link); err != nil {
		t.Fatal(err)
	}
	names := func() []string { return treeNames(root) }
	before := names()
	f := startFleet(t)
	for _, c := range []struct {
		env  string
		args []string
		name string
	}{
		{inKey, []string{"--to", "etcd", root}, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{f.dir, []string{"--to", "etcd", "--transcripts-dir=" + deeper, root}, "--transcripts-dir"},
		{link, []string{"--to", "etcd", "--dry-run", root}, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{inKey, []string{"--from", "etcd", root}, "PI_SESSIONS_TRANSCRIPTS_DIR"},
	} {
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", c.env)
		code, out, errs := runMigrateCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) || !strings.Contains(errs, "inside the key dir "+key+" of the sessions root this migration moves") {
			t.Errorf("PI_SESSIONS_TRANSCRIPTS_DIR=%s migrate %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s and the key dir", c.env, c.args, code, out, errs, c.name)
		}
		if got := names(); !slices.Equal(got, before) {
			t.Fatalf("migrate %q changed the root: %q, was %q", c.args, got, before)
		}
	}
	// The fleet's own dir, outside the root, takes the key.
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != 1 {
		t.Errorf("--to etcd into the fleet's own dir = %+v, want 1 migrated", sum)
	}
}
