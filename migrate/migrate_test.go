package migrate

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// newCorpus builds the corpus in a fresh root and returns the root and the
// keys.
func newCorpus(t testing.TB) (string, []corpusKey) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sessions")
	must(t, osMkdir(root))
	return root, buildCorpus(t, root)
}

func TestEveryOddValueIsCarried(t *testing.T) {
	root, keys := newCorpus(t)
	locked := treeState(t, filepath.Join(root, keyNamed(keys, "lock fresh")), true, true)
	got, sum := migrate(t, root, false, testOpts())
	for _, c := range keys {
		r := got[c.key()]
		wantAction := c.action
		if wantAction == "" {
			wantAction = Migrated
		}
		if r.Action != wantAction {
			t.Errorf("%s: action %s (%s), want %s", c.name, r.Action, r.Cause, wantAction)
			continue
		}
		dir := filepath.Join(root, c.key())
		if wantAction == Migrated {
			sc, ok := dbValues(t, dir)
			if !ok {
				t.Errorf("%s: no meta.db", c.name)
				continue
			}
			if g := fmtValues(valuesOf(sc)); g != c.want {
				t.Errorf("%s: db holds\n\t%s\nwant\n\t%s", c.name, g, c.want)
			}
			if g := fmtValues(*r.Values); g != c.want {
				t.Errorf("%s: reported %s", c.name, g)
			}
			if odd := len(r.Oddities) != 0; odd == plainValues[c.name] {
				t.Errorf("%s: oddities %v", c.name, r.Oddities)
			}
		}
		if wantAction != Locked {
			for _, n := range []string{"pi-version", "venue", "resume-chain", "context", "lock", "venue.incoming", "current.jsonl.incoming"} {
				if _, err := lstat(filepath.Join(dir, n)); err == nil {
					t.Errorf("%s: %s left behind", c.name, n)
				}
			}
		}
	}
	if after := treeState(t, filepath.Join(root, keyNamed(keys, "lock fresh")), true, true); diffStates(locked, after) != "" {
		t.Errorf("the freshly locked key changed:\n%s", diffStates(locked, after))
	}
	if sum.Skipped != corpusSkips || sum.Locked != 1 || sum.Failed != 0 || sum.Complete() {
		t.Errorf("summary %+v", sum)
	}
	// The transcript's identity and the legacy clock are recorded.
	sc, _ := dbValues(t, filepath.Join(root, keyNamed(keys, "plain")))
	if sc.Transcript.PromotedAt != testNow.Add(-time.Hour).UnixNano() || sc.Transcript.Gen != 1 {
		t.Errorf("transcript record %+v", sc.Transcript)
	}
}

func TestOddityReports(t *testing.T) {
	root, keys := newCorpus(t)
	got, _ := migrate(t, root, false, Options{DryRun: true, Now: testOpts().Now})
	for name, want := range map[string]string{
		"venue link":                `venue: symbolic link -> no value: stamped "(pending)"`,
		"venue fifo":                `venue: FIFO -> no value`,
		"venue oversized":           `venue: 5005-byte file (over 4096) -> no value`,
		"venue absent":              `venue: absent -> "local"`,
		"pi empty":                  `pi-version: empty file -> unknown ("")`,
		"chain 007":                 `resume-chain: "007" -> chain 0`,
		"chain spaced":              `resume-chain: " 3 " -> "3" (trimmed`,
		"context text":              `context: "abc" -> no measurement`,
		"context tabs and case":     `context: model stamp "Anthropic/Claude-X" -> compared as written`,
		"lock stale":                `lock: regular file, 2h0m0s old -> a stale lock: removed`,
		"temps":                     `venue.incoming: a legacy promotion's temp -> removed`,
		"transcript link":           `current.jsonl: symbolic link -> not recorded: the key stays not-a-regular-file`,
		"interrupted before commit": `meta.db: empty (no record at all) -> an interrupted migration`,
	} {
		r := got[keyNamed(keys, name)]
		var lines []string
		for _, o := range r.Oddities {
			lines = append(lines, o.File+": "+o.Found+" -> "+o.ReadAs)
		}
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("%s: oddities\n\t%s\nhave no line starting %q", name, strings.Join(lines, "\n\t"), want)
		}
	}
}

// plainValues are the corpus keys whose legacy files hold nothing odd:
// they vary the verdict, not the reading.
var plainValues = map[string]bool{"plain": true, "pi other": true, "chain at bound": true, "chain absent": true,
	"context full unstamped": true, "context foreign model": true, "transcript empty": true, "transcript expired": true,
	"transcript unparseable": true, "transcript old header": true, "transcript large": true}

func keyNamed(keys []corpusKey, name string) string {
	for _, c := range keys {
		if c.name == name {
			return c.key()
		}
	}
	panic("no corpus key " + name)
}

func TestSecondRunFindsNothingToDo(t *testing.T) {
	root, _ := newCorpus(t)
	migrate(t, root, false, testOpts())
	before := treeState(t, root, true, true)
	got, sum := migrate(t, root, false, testOpts())
	if sum.Migrated != 0 || sum.Failed != 0 {
		t.Errorf("second run: %+v", sum)
	}
	for k, r := range got {
		if len(r.Removed) != 0 {
			t.Errorf("%s: second run removed %v", k, r.Removed)
		}
	}
	if d := diffStates(before, treeState(t, root, true, true)); d != "" {
		t.Errorf("second run changed the tree:\n%s", d)
	}

	migrate(t, root, true, testOpts())
	before = treeState(t, root, true, true)
	if _, sum := migrate(t, root, true, testOpts()); sum.Migrated != 0 || sum.Failed != 0 {
		t.Errorf("second rollback: %+v", sum)
	}
	if d := diffStates(before, treeState(t, root, true, true)); d != "" {
		t.Errorf("second rollback changed the tree:\n%s", d)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	root, _ := newCorpus(t)
	parent := filepath.Dir(root)
	dry := Options{DryRun: true, Now: testOpts().Now}
	before := treeState(t, parent, true, true)
	got, sum := migrate(t, root, false, dry)
	if d := diffStates(before, treeState(t, parent, true, true)); d != "" {
		t.Fatalf("dry run changed the tree:\n%s", d)
	}
	real, rsum := migrate(t, root, false, testOpts())
	rsum.Seconds, sum.Seconds, rsum.DryRun = 0, 0, true
	if sum != rsum {
		t.Errorf("dry run planned %+v, the run did %+v", sum, rsum)
	}
	for k, r := range got {
		if r.Action != real[k].Action || !slices.Equal(r.Removed, real[k].Removed) {
			t.Errorf("%s: planned %s %v, did %s %v", k, r.Action, r.Removed, real[k].Action, real[k].Removed)
		}
	}

	before = treeState(t, parent, true, true)
	got, _ = migrate(t, root, true, dry)
	if d := diffStates(before, treeState(t, parent, true, true)); d != "" {
		t.Fatalf("dry rollback changed the tree:\n%s", d)
	}
	real, _ = migrate(t, root, true, testOpts())
	for k, r := range got {
		if r.Action != real[k].Action || !slices.Equal(r.Written, real[k].Written) || !slices.Equal(r.Removed, real[k].Removed) {
			t.Errorf("%s: planned %s w%v r%v, did %s w%v r%v", k, r.Action, r.Written, r.Removed, real[k].Action, real[k].Written, real[k].Removed)
		}
	}
}
