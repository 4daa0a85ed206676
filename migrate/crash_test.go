package migrate

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// A crashBed is a corpus template and the two trees a clean run makes of
// it; every crash round starts from a copy of the template.
type crashBed struct {
	keys       []corpusKey
	legacyTree string // the corpus parent dir (root is <parent>/sessions)
	dbTree     string // the same after a clean ToDB
	refDB      map[string]string
	refLegacy  map[string]string
	values     map[string]string // each key's values, which no instant may lose
}

// crashKeys is the part of the corpus the crash tests run: every kind of
// write and removal either direction makes, at a fraction of the cost.
var crashKeys = []string{"plain", "venue link", "venue fifo", "venue empty dir", "venue whitespace", "pi absent",
	"chain huge", "context tabs and case", "context text", "lock stale", "lock fresh", "temps", "transcript link",
	"only a transcript", "interrupted before commit", "mixed", "pending promotion", "migrated long ago"}

func newCrashBed(t *testing.T) *crashBed { return newCrashBedOf(t, crashKeys...) }

// newCrashBedOf is newCrashBed for the corpus keys named.
func newCrashBedOf(t *testing.T, names ...string) *crashBed {
	t.Helper()
	b := &crashBed{legacyTree: t.TempDir(), dbTree: t.TempDir()}
	root := filepath.Join(b.legacyTree, "sessions")
	must(t, osMkdir(root))
	b.keys = buildCorpus(t, root, names...)
	if len(b.keys) != len(names) {
		t.Fatalf("%d keys named, the corpus has %d of them", len(names), len(b.keys))
	}
	work := b.copy(t, b.legacyTree)
	migrate(t, work, false, testOpts())
	b.refDB = treeState(t, work, false, false)
	b.values = effectiveValues(t, work)
	powercut.CopyTree(t, filepath.Dir(work), b.dbTree)
	migrate(t, work, true, testOpts())
	b.refLegacy = treeState(t, work, false, false)
	return b
}

// copy copies a template and returns the root in the copy.
func (b *crashBed) copy(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	powercut.CopyTree(t, from, to)
	return filepath.Join(to, "sessions")
}

// start returns a fresh root for a run in one direction and the tree a
// clean run in that direction ends with.
func (b *crashBed) start(t *testing.T, toLegacy bool) (string, map[string]string) {
	if toLegacy {
		return b.copy(t, b.dbTree), b.refLegacy
	}
	return b.copy(t, b.legacyTree), b.refDB
}

// effectiveValues is what each key holds by the migration's own rule: a
// meta.db with any record is authoritative, else the legacy files are. A venue that matches nothing
// is written one way: "" and "(pending)" mean the same to the ladder.
func effectiveValues(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rd, err := fsat.OpenDir(root)
	must(t, err)
	defer rd.Close()
	names, err := fsat.ReadDirNames(rd)
	must(t, err)
	for _, n := range names {
		kd, err := fsat.OpenDirAt(rd, n)
		if err != nil {
			continue
		}
		k, err := scanKey(kd, testNow)
		must(t, err)
		var v Values
		sc, hasDB := dbValues(t, filepath.Join(root, n))
		if hasDB && sc != (db.Sidecars{}) {
			v = valuesOf(sc)
		} else {
			v, _, err = readLegacy(k)
			must(t, err)
			v.Transcript, _, err = transcriptID(context.Background(), kd, math.MaxInt64)
			must(t, err)
		}
		kd.Close()
		if v.Venue != nil && *v.Venue == "" {
			p := legacy.PendingVenue
			v.Venue = &p
		}
		s := fmtValues(v)
		if v.Transcript != nil {
			s += " " + strconv.FormatInt(v.Transcript.Size, 10) + "/" + strconv.FormatUint(uint64(v.Transcript.CRC32C), 10) + "@" + v.Transcript.PromotedAt.String()
		}
		out[n] = s
	}
	return out
}

// check asserts that no value was lost at whatever instant the run
// stopped, then re-runs the direction and asserts the clean run's tree.
func (b *crashBed) check(t *testing.T, root string, toLegacy bool, ref map[string]string, what string) {
	t.Helper()
	now := effectiveValues(t, root)
	for k, v := range b.values {
		if now[k] != v {
			t.Fatalf("%s: %s holds\n\t%s\nwant\n\t%s", what, k, now[k], v)
		}
	}
	_, sum := migrate(t, root, toLegacy, testOpts())
	if sum.Failed != 0 {
		t.Fatalf("%s: re-run failed: %+v", what, sum)
	}
	got := treeState(t, root, false, false)
	for p := range got {
		// A kill inside db's own creation of meta.db leaves its temp:
		// db's debris, which check --repair removes once it is an hour
		// old; nothing reads it, and migrate does not guess whether a
		// rival is still creating it.
		if strings.HasPrefix(filepath.Base(p), db.TempPrefix) {
			delete(got, p)
		}
	}
	if d := diffStates(ref, got); d != "" {
		t.Fatalf("%s: the re-run did not converge:\n%s", what, d)
	}
}

var errInjected = errors.New("injected fault")

var (
	toDBPoints     = []faults.Point{faults.ToDBLocked, faults.ToDBCommitted, faults.ToDBRemoved, faults.ToDBDirSynced}
	toLegacyPoints = []faults.Point{faults.ToLegacyUnlocked, faults.ToLegacyRolledForward, faults.ToLegacyTemps, faults.ToLegacyRenamed, faults.ToLegacyMtime, faults.ToLegacySynced, faults.ToLegacyDBRemoved}
)

// TestFaultAtEveryBoundary fails each write boundary once with an error:
// the key is reported failed, nothing is lost, and a re-run converges.
func TestFaultAtEveryBoundary(t *testing.T) {
	b := newCrashBed(t)
	for _, p := range append(append([]faults.Point{}, toDBPoints...), toLegacyPoints...) {
		t.Run(string(p), func(t *testing.T) {
			toLegacy := strings.HasPrefix(string(p), "to-legacy")
			root, ref := b.start(t, toLegacy)
			var once sync.Once
			fired := false
			opts := testOpts()
			t.Cleanup(func() { faults.Set(nil) })
			faults.Set(migrateOnly(func(q faults.Point) error {
				var err error
				if q == p {
					once.Do(func() { err, fired = errInjected, true })
				}
				return err
			}))
			got, sum := migrate(t, root, toLegacy, opts)
			faults.Set(nil)
			if !fired || sum.Failed != 1 {
				t.Fatalf("fired %v, summary %+v", fired, sum)
			}
			for k, r := range got {
				if r.Action == Failed && !strings.Contains(r.Cause, errInjected.Error()) {
					t.Errorf("%s failed with %q", k, r.Cause)
				}
			}
			b.check(t, root, toLegacy, ref, string(p))
		})
	}
}

// TestKillAtEveryBoundary SIGKILLs a child migration at each write
// boundary.
func TestKillAtEveryBoundary(t *testing.T) {
	b := newCrashBed(t)
	for _, p := range append(append([]faults.Point{}, toDBPoints...), toLegacyPoints...) {
		t.Run(string(p), func(t *testing.T) {
			toLegacy := strings.HasPrefix(string(p), "to-legacy")
			root, ref := b.start(t, toLegacy)
			c := startChild(t, direction(toLegacy), root, "SESSDB_KILL_AT="+string(p))
			if _, killed := c.reports(t); !killed {
				t.Fatalf("the child was not killed at %s", p)
			}
			b.check(t, root, toLegacy, ref, string(p))
		})
	}
}

func direction(toLegacy bool) string {
	if toLegacy {
		return "to-legacy"
	}
	return "to-db"
}

// TestRandomKills kills child migrations at random instants: at a random
// fault call, or after a random delay (which also lands between
// boundaries). SESSDB_MIGRATE_CRASH_ROUNDS sets the rounds of ToDB (60, so
// that the suite stays short; .ci/long runs 2000; ToLegacy runs half as
// many), SESSDB_MIGRATE_CRASH_SEED the seed, which is printed.
func TestRandomKills(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	if n, err := strconv.Atoi(os.Getenv("SESSDB_MIGRATE_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := time.Now().UnixNano()
	if n, err := strconv.ParseInt(os.Getenv("SESSDB_MIGRATE_CRASH_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("seed %d (SESSDB_MIGRATE_CRASH_SEED), %d rounds of ToDB, %d of ToLegacy", seed, rounds, max(rounds/2, 1))
	rng := rand.New(rand.NewSource(seed))
	b := newCrashBed(t)
	for _, toLegacy := range []bool{false, true} {
		rounds := rounds
		if toLegacy {
			rounds = max(rounds/2, 1)
		}
		// A clean child run gives the span and the fault calls to aim at.
		root, _ := b.start(t, toLegacy)
		calls := 0
		opts := testOpts()
		t.Cleanup(func() { faults.Set(nil) })
		faults.Set(migrateOnly(func(faults.Point) error { calls++; return nil }))
		migrate(t, root, toLegacy, opts)
		faults.Set(nil)
		root, _ = b.start(t, toLegacy)
		c := startChild(t, direction(toLegacy), root)
		began := time.Now() // the child is ready: what follows is the run
		c.reports(t)
		span := time.Since(began)

		killed := 0
		for i := range rounds {
			root, ref := b.start(t, toLegacy)
			what := direction(toLegacy) + " round " + strconv.Itoa(i)
			var c *child
			if rng.Intn(2) == 0 {
				c = startChild(t, direction(toLegacy), root, "SESSDB_KILL_NTH="+strconv.Itoa(1+rng.Intn(calls)))
			} else {
				c = startChild(t, direction(toLegacy), root)
				time.AfterFunc(time.Duration(rng.Int63n(int64(span))), func() { c.cmd.Process.Signal(syscall.SIGKILL) })
			}
			if _, k := c.reports(t); k {
				killed++
			}
			b.check(t, root, toLegacy, ref, what)
		}
		t.Logf("%s: %d of %d rounds killed mid-run (%d fault calls, %v a run)", direction(toLegacy), killed, rounds, calls, span)
		if killed < rounds/4 {
			t.Errorf("only %d of %d rounds were killed", killed, rounds)
		}
	}
}
