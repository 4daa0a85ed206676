package migrate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// A profile is a job and the operator's bounds: one column of the verdict
// table.
type profile struct {
	name   string
	bounds gates.Bounds
	job    store.Job
}

func profiles() []profile {
	const day = 24 * time.Hour
	all := gates.Bounds{MaxBytes: 8192, TTL: 14 * day, MaxAge: 30 * day, MaxResumeChain: 3, MaxContextPct: 80}
	var out []profile
	for _, b := range []struct {
		name string
		b    gates.Bounds
	}{{"unbounded", gates.Bounds{}}, {"all bounds", all}} {
		for _, venue := range []string{"local", "podman", ""} {
			for _, pi := range []string{testPi, "0.79.0", ""} {
				for _, model := range []string{"anthropic/claude-x", "openai/gpt-5", ""} {
					out = append(out, profile{fmt.Sprintf("%s venue=%q pi=%q model=%q", b.name, venue, pi, model), b.b, store.Job{PiVersion: pi, Venue: venue, Model: model}})
				}
			}
		}
	}
	job := store.Job{PiVersion: testPi, Venue: "local", Model: "Anthropic/Claude-X"}
	for name, b := range map[string]gates.Bounds{
		"ttl":         {TTL: 14 * day},
		"max bytes":   {MaxBytes: 8192},
		"max age":     {MaxAge: 30 * day},
		"chain":       {MaxResumeChain: 3},
		"chain 1":     {MaxResumeChain: 1},
		"context":     {MaxContextPct: 80},
		"context 100": {MaxContextPct: 100},
	} {
		out = append(out, profile{name, b, job})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// verdicts resolves every key of the corpus for every profile.
func verdicts(t *testing.T, root string, keys []string, ps []profile) map[string]string {
	t.Helper()
	jobDir := t.TempDir()
	out := map[string]string{}
	for _, p := range ps {
		st, err := store.New(root, store.Options{Bounds: p.bounds, Now: func() time.Time { return testNow }})
		must(t, err)
		for _, k := range keys {
			sess, err := st.Resolve(k, p.job, jobDir)
			if err != nil {
				t.Fatalf("resolve %s: %v", k, err)
			}
			out[k+" | "+p.name] = fmt.Sprintf("%v %s", sess.Resume, sess.Reason)
		}
	}
	return out
}

// TestVerdictsSurviveMigrationAndRollback is the claim tested
// directly: for every key of the corpus and every profile, store.Resolve
// gives the same {resume, reason} on the legacy layout (the store's legacy
// fallback), after ToDB (meta.db), and after ToLegacy (legacy again).
func TestVerdictsSurviveMigrationAndRollback(t *testing.T) {
	root, corpus := newCorpus(t)
	names, err := os.ReadDir(root)
	must(t, err)
	unsettled := map[string]bool{}
	for _, c := range corpus {
		unsettled[c.key()] = c.unsettled
	}
	var keys []string
	for _, e := range names {
		if store.ValidKey(e.Name()) && !unsettled[e.Name()] {
			keys = append(keys, e.Name())
		}
	}
	ps := profiles()
	before := verdicts(t, root, keys, ps)
	label := map[string]string{}
	for _, c := range corpus {
		label[c.key()] = c.name
	}

	// The table must exercise the ladder, or equality proves nothing.
	seen := map[string]bool{}
	for _, v := range before {
		seen[v] = true
	}
	for _, r := range []gates.Reason{gates.Resumed, gates.Absent, gates.NotARegularFile, gates.TooLarge, gates.Expired, gates.VenueChanged,
		gates.PiVersionChanged, gates.ResumeChainTooLong, gates.ContextTooFull, gates.Unparseable, gates.ConversationTooOld} {
		if !seen[fmt.Sprintf("%v %s", r == gates.Resumed, r)] {
			t.Errorf("no key of the corpus is %s under any profile", r)
		}
	}

	// A migration killed before its commit left an empty meta.db beside
	// the legacy files. A db with no record vouches for nothing, so the
	// store still judges the key by its legacy files: its files are
	// plain's, and so must its verdicts be, before the re-run as after.
	interrupted, plain := keyNamed(corpus, "interrupted before commit"), keyNamed(corpus, "plain")
	for _, p := range ps {
		if v, w := before[interrupted+" | "+p.name], before[plain+" | "+p.name]; v != w {
			t.Errorf("%s: the interrupted key is %s before the re-run, the same files without the empty db %s", p.name, v, w)
		}
	}
	check := func(phase string, after map[string]string) {
		t.Helper()
		n := 0
		for k, v := range before {
			if after[k] != v {
				if n++; n <= 20 {
					t.Errorf("%s: %s (%s): %s, was %s", phase, k, label[k[:32]], after[k], v)
				}
			}
		}
		if n > 20 {
			t.Errorf("%s: %d more", phase, n-20)
		}
	}
	migrate(t, root, false, testOpts())
	check("after migration", verdicts(t, root, keys, ps))
	migrate(t, root, true, testOpts())
	check("after rollback", verdicts(t, root, keys, ps))
	t.Logf("%d keys x %d profiles", len(keys), len(ps))
}

// TestRoundTripBytes: legacy -> db -> legacy gives back each sidecar's
// bytes up to the documented normalisations (corpusKey.back), the
// transcript untouched, and its mtime at the recorded promotion time.
func TestRoundTripBytes(t *testing.T) {
	root, keys := newCorpus(t)
	before := treeState(t, root, false, false)
	migrate(t, root, false, testOpts())
	got, sum := migrate(t, root, true, testOpts())
	if sum.Failed != 0 {
		t.Fatalf("rollback: %+v", sum)
	}
	after := treeState(t, root, false, false)
	for _, c := range keys {
		if c.action == Locked {
			continue
		}
		files := base()
		for n, e := range c.files {
			files[n] = e
		}
		for n, e := range c.back {
			files[n] = e
		}
		dir := filepath.Join(root, c.key())
		for _, n := range append([]string{"lock", "meta.db"}, append(sidecarNames, namesOf(files)...)...) {
			var b []byte
			fi, err := os.Lstat(filepath.Join(dir, n))
			if err == nil && fi.Mode().IsRegular() { // never open a FIFO here
				b, err = os.ReadFile(filepath.Join(dir, n))
			}
			e := files[n]
			switch {
			case n == "current.jsonl":
				if k := filepath.Join(c.key(), n); before[k] != after[k] && c.setup == nil {
					t.Errorf("%s: transcript was %s, is %s", c.name, before[k], after[k])
				}
			case e.kind == 0 || n == "meta.db":
				if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
					t.Errorf("%s: %s should be gone", c.name, n)
				}
			case e.kind == 'f' && (err != nil || !fi.Mode().IsRegular() || string(b) != e.data):
				t.Errorf("%s: %s reads %q (%v), want %q", c.name, n, b, err, e.data)
			case e.kind != 'f':
				t.Errorf("%s: %s expected as %c after the round trip; give it a back entry", c.name, n, e.kind)
			}
		}
		if r := got[c.key()]; c.action == "" && len(r.Written) != 4-countAbsent(files) {
			t.Errorf("%s: wrote %v", c.name, r.Written)
		}
	}
	mixed := filepath.Join(keyNamed(keys, "mixed"), "current.jsonl")
	if fi, err := os.Stat(filepath.Join(root, mixed)); err != nil || !fi.ModTime().Equal(testNow.Add(-2*time.Hour)) {
		t.Errorf("a promoted key's transcript mtime is %v, want the recorded promotion time", fi.ModTime())
	}
}

func namesOf(m map[string]ent) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

func countAbsent(files map[string]ent) int {
	n := 0
	for _, s := range sidecarNames {
		if files[s].kind == 0 {
			n++
		}
	}
	return n
}
