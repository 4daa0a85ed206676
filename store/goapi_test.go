package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// The store's Go API as a worker's code uses it: what a fault leaves in
// the job dir.

// A store whose root is relative, the working directory it was taken
// from gone, cannot tell where its root is: a resolve refuses the job dir
// as one it cannot tell apart from the store's directory
// (ErrJobDirInStore) before it touches anything, the earlier resolve's
// ticket and staged file left as they were, and a promote of that job
// dir fails, naming no root. (Before, the check passed what it could not
// judge, the earlier ticket was removed and the store's ID failed next;
// a fault after the job dir is judged still removes it:
// TestFailedResolveRemovesAnEarlierTicket.)
func TestResolveThatCannotNameItsRootIsRefused(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "cwd")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	s, err := store.New("sessions", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", ID: "job-1"}
	jobDir := filepath.Join(base, "job")
	if _, err := s.Resolve(key, job, jobDir); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReadTicket(jobDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	if wd, err := os.Getwd(); err == nil {
		t.Fatalf("the working directory is still named, %s: the test makes no fault", wd)
	}
	if _, err := s.Resolve(key, job, jobDir); !errors.Is(err, store.ErrJobDirInStore) {
		t.Fatalf("resolve with a root that cannot be named: %v, want ErrJobDirInStore", err)
	}
	sess, err := store.ReadTicket(jobDir)
	if err != nil {
		t.Errorf("the earlier resolve's ticket was touched: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)); err != nil {
		t.Errorf("the earlier resolve's staged file was touched: %v", err)
	}
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err == nil || res.Promoted {
		t.Errorf("a promote with a root that cannot be named: %+v, %v", res, err)
	}
}

// A store whose root leads, through a link, to a name that is not UTF-8
// cannot name its root in a ticket, which is text: a resolve refuses
// (ErrRootNotUTF8) before it makes anything, where it staged the job and
// wrote a ticket naming the root with U+FFFD, which no promote of the
// job could then match (ErrWrongRoot), its run lost.
func TestResolveOfARootThatLeadsToANameNotUTF8IsRefused(t *testing.T) {
	base := t.TempDir()
	bad := filepath.Join(base, "bad\xffdir")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Skipf("this file system refuses a name that is not UTF-8: %v", err)
	}
	link := filepath.Join(base, "sessions")
	if err := os.Symlink(bad, link); err != nil {
		t.Fatal(err)
	}
	// Through a link, and relative from a working directory that is not
	// UTF-8.
	for _, root := range []string{link, "sessions"} {
		if root == "sessions" {
			t.Chdir(bad)
		}
		s, err := store.New(root, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		jobDir := filepath.Join(base, "job")
		_, err = s.Resolve(store.Key("github", "acme/widget", "pi/issue-42"), store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
		if !errors.Is(err, store.ErrRootNotUTF8) {
			t.Errorf("resolve of %s: %v; want ErrRootNotUTF8", root, err)
		}
		if _, err := os.Lstat(jobDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the job dir of %s: %v; want nothing made", root, err)
		}
	}
}

// A reading the caller gives must be one: a negative window or token
// count is refused before anything is written, as the CLI refuses it
// (exit 2). Taken, a negative window cleared the key's reading (no
// measurement) and negative tokens were stored as one: either way the
// context bound never refused the conversation again.
func TestPromoteRefusesANegativeReading(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{Bounds: gates.Bounds{MaxContextPct: 50}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
	full := int64(190000) // of the model's 200000
	for i, req := range []store.PromoteRequest{
		{PiVersion: "0.58.3", Tokens: &full},
		{PiVersion: "0.58.3", Window: -1},
		{PiVersion: "0.58.3", Tokens: ptr(int64(-1))},
	} {
		jobDir := filepath.Join(base, fmt.Sprint("job-", i))
		sess, err := s.Resolve(key, job, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && sess.Reason != gates.ContextTooFull {
			t.Fatalf("request %d: resolved %s, want context-too-full", i, sess.Reason)
		}
		if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
			t.Fatal(err)
		}
		res, err := s.Promote(sess, req)
		switch {
		case i == 0 && (err != nil || !res.Promoted):
			t.Fatalf("the full run: %+v, %v", res, err)
		case i > 0 && (!errors.Is(err, store.ErrBadRequest) || res.Promoted || res.Reason == gates.PromoteFailed):
			t.Errorf("request %d (window %d): %+v, %v; want ErrBadRequest before anything is written", i, req.Window, res, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// elsewhere is a Backend that is not a sessions root, as a fleet is; the
// walks must not touch it.
type elsewhere struct{}

func (elsewhere) ID() (string, error)            { return "/elsewhere (etcd prefix /x)", nil }
func (elsewhere) SameID(id string) (bool, error) { return id == "/elsewhere (etcd prefix /x)", nil }
func (elsewhere) View(string, gates.Bounds) (store.KeyView, error) {
	return nil, errors.New("not for a walk")
}
func (elsewhere) Begin(string, store.Base) (store.KeyTxn, error) {
	return nil, errors.New("not for a walk")
}

// The operator's walks and actions work on a sessions root only (a
// fleet's are package fleet's): on a store made by NewOn each says so.
// Before, Reap reported a complete run that found nothing to remove, and
// the others an "open : no such file or directory".
func TestWalksOnAnotherBackendSaySo(t *testing.T) {
	s := store.NewOn(elsewhere{}, store.Options{Bounds: gates.Bounds{TTL: 1}})
	key := store.Key("github", "acme/widget", "pi/issue-42")
	ctx := t.Context()
	errs := map[string]error{}
	_, errs["check"] = s.Check(ctx, store.CheckOptions{}, func(store.Finding) error { return nil })
	_, errs["check --accept"] = s.Check(ctx, store.CheckOptions{Repair: true, Accept: key}, func(store.Finding) error { return nil })
	errs["inspect"] = s.InspectWith(ctx, store.InspectOptions{}, func(store.KeyReport) error { return nil })
	_, errs["stats"] = s.Stats(ctx, store.StatsOptions{})
	_, errs["reap"] = s.ReapWith(ctx, store.ReapOptions{})
	_, errs["reap --dry-run"] = s.Reap(true)
	_, errs["roll forward"] = s.RollForward(key)
	_, errs["accept"] = s.Accept(key)
	_, errs["quarantine"] = s.Quarantine(key)
	for what, err := range errs {
		if !errors.Is(err, store.ErrNoSessionsRoot) {
			t.Errorf("%s: %v, want ErrNoSessionsRoot", what, err)
		}
	}
	if r := s.DeepCheckDB(key); r.Incomplete != store.ErrNoSessionsRoot.Error() {
		t.Errorf("deep check: %+v, want incomplete for %v", r, store.ErrNoSessionsRoot)
	}
	if root := s.Root(); root != "" {
		t.Errorf("the root of a store made by NewOn is %q, want none", root)
	}
}

// Stats returns figures only with ctx's own error (or none): a root it
// cannot read is nil stats and the root's error, whether or not ctx has
// ended meanwhile. Before, an ended ctx made any error an interrupted
// run's, with zero figures marked Interrupted.
func TestStatsOfAnUnreadableRootIsNoFigures(t *testing.T) {
	s, err := store.New(filepath.Join(t.TempDir(), "not-made"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	st, err := s.Stats(ctx, store.StatsOptions{})
	if st != nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stats = %+v, %v; want no figures and the root's error", st, err)
	}
}

// The walks take a nil ctx as context.Background(), as Reap and Inspect
// pass it: none is stopped, and nothing panics. Before, InspectWith,
// Stats and ReapWith panicked in a walker goroutine (a crash the caller
// cannot recover) and Check in the caller.
func TestWalksTakeANilContext(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	jobDir := filepath.Join(base, "job")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	var none context.Context
	errs := map[string]error{}
	keys := 0
	_, errs["check"] = s.Check(none, store.CheckOptions{}, func(store.Finding) error { return nil })
	errs["inspect"] = s.InspectWith(none, store.InspectOptions{Verify: true, History: 1}, func(store.KeyReport) error { keys++; return nil })
	st, err := s.Stats(none, store.StatsOptions{})
	errs["stats"] = err
	r, err := s.ReapWith(none, store.ReapOptions{})
	errs["reap"] = err
	for what, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if keys != 1 || st == nil || st.Keys != 1 || st.Interrupted || r.Kept != 1 {
		t.Errorf("inspect reported %d keys, stats %+v, reap %+v: want the one key, whole", keys, st, r)
	}
}

// A nil visit is no callback, as migrate's: Check's summary alone tells
// what it found, and Inspect walks to no end but its error. Both panicked
// on the nil function.
func TestWalksTakeANilVisit(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	if err := os.MkdirAll(filepath.Join(s.Root(), key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), key, ".current.jsonl.tmp-0123456789abcdef"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := s.Check(context.Background(), store.CheckOptions{}, nil)
	if err != nil || sum.Keys != 1 || sum.Problems != 1 {
		t.Errorf("check with a nil visit: %+v, %v; want the key's stray temp counted", sum, err)
	}
	if err := s.InspectWith(context.Background(), store.InspectOptions{}, nil); err != nil {
		t.Errorf("inspect with a nil visit: %v", err)
	}
	if err := s.Inspect(0, nil); err != nil {
		t.Errorf("inspect with a nil visit: %v", err)
	}
}

// A Store not made by New or NewOn (its zero value), or made by NewOn
// with no Backend, has nowhere to read or write a key: Resolve and
// Promote say so (ErrNoBackend) and make nothing in the job dir, as the
// walks already answered ErrNoSessionsRoot. Both panicked (rev-go).
//
// A nil pointer in the Backend (a *fleet.Backend that fleet.Open failed to
// make, passed on by a worker's error handling) is no backend either.
// Before, the interface holding it was not nil: Resolve panicked in the
// backend's ID, and Promote in its SameID.
func TestAStoreWithNoBackendSaysSo(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/no-backend")
	var nilBackend *elsewhere
	for name, s := range map[string]*store.Store{"zero": {}, "NewOn(nil)": store.NewOn(nil, store.Options{}), "NewOn of a nil pointer": store.NewOn(nilBackend, store.Options{})} {
		jobDir := filepath.Join(t.TempDir(), "job")
		if _, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir); !errors.Is(err, store.ErrNoBackend) {
			t.Errorf("%s: resolve: %v; want ErrNoBackend", name, err)
		}
		if _, err := os.Lstat(jobDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the job dir after the refused resolve: %v; want nothing made", name, err)
		}
		if _, err := s.Promote(store.Session{Key: key, JobDir: jobDir}, store.PromoteRequest{}); !errors.Is(err, store.ErrNoBackend) {
			t.Errorf("%s: promote: %v; want ErrNoBackend", name, err)
		}
	}
}

// ReadCRC32C takes a nil context as context.Background(), as the walks
// and VerifyRecorded do; it panicked (rev-go).
func TestReadCRC32CTakesANilContext(t *testing.T) {
	data := []byte("twelve bytes")
	var none context.Context
	n, sum, err := store.ReadCRC32C(none, bytes.NewReader(data), 100)
	if err != nil || n != int64(len(data)) || sum != crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("ReadCRC32C(nil, …) = %d, %08x, %v; want %d bytes and their CRC32C", n, sum, err, len(data))
	}
}

// A Session with no JobDir is one no resolve gives (Resolve and
// ReadTicket always set it): Promote refuses it (ErrBadTicket, and
// ErrNoJobDir as Resolve does an empty job dir), nothing read or
// written, whatever the working directory holds. Before, the
// promote was absent, a refusal with no error, which tells the worker its
// job left nothing to promote while the run was whole in its job dir.
func TestAPromoteOfASessionWithNoJobDirIsABadTicket(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/no-job-dir")
	jobDir := filepath.Join(base, "job")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local", ID: "job-1"}, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "the job's run"); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(base, "cwd")
	if err := os.MkdirAll(filepath.Join(cwd, store.StagedDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	for _, here := range []bool{false, true} {
		if here {
			if err := os.WriteFile(filepath.Join(cwd, store.StagedDirName, store.TranscriptName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := appendTurn(filepath.Join(cwd, store.StagedDirName, store.TranscriptName), 1, "not this job's run"); err != nil {
				t.Fatal(err)
			}
		}
		lost := sess
		lost.JobDir = ""
		res, err := s.Promote(lost, store.PromoteRequest{PiVersion: "0.58.3"})
		if !errors.Is(err, store.ErrBadTicket) || !errors.Is(err, store.ErrNoJobDir) || res.Promoted || res.Reason != "" {
			t.Errorf("a Session with no JobDir (a file in the working directory's session dir: %v): %+v, %v; want ErrBadTicket and ErrNoJobDir, nothing tried", here, res, err)
		}
		if _, err := os.Lstat(filepath.Join(base, "sessions", key)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the key after the refused promote: %v; want nothing written", err)
		}
	}
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
		t.Fatalf("the Session as resolved: %+v, %v", res, err)
	}
}

// A resolve given no job dir says so (ErrNoJobDir, for errors.Is), and
// makes nothing, the working directory's contents included. Before, its
// error was the mkdir's "mkdir : no such file or directory", which names
// nothing a caller can find; then (ca354ce) "no job dir given" as text
// only, no sentinel.
func TestAResolveWithNoJobDirSaysSo(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(base, "cwd")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	key := store.Key("github", "acme/widget", "pi/no-job-dir")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, "")
	if !errors.Is(err, store.ErrNoJobDir) || sess != (store.Session{}) {
		t.Errorf("resolve with no job dir: %+v, %v; want ErrNoJobDir", sess, err)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the working directory holds %d entries after the refused resolve, want none", len(ents))
	}
}

// Every method of a Store with no backend (its zero value, or NewOn(nil))
// answers without a panic: Stats, as the other walks, ErrNoSessionsRoot,
// and CheckRoot ErrNoBackend, as Promote, which asks it, does. Before, Stats
// panicked on the zero Store's clock, and CheckRoot on its backend (§5aq
// made Resolve and Promote say ErrNoBackend; these two were left).
func TestEveryMethodOfAStoreWithNoBackendAnswers(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/no-backend")
	var nilBackend *elsewhere
	for name, s := range map[string]*store.Store{"zero": {}, "NewOn(nil)": store.NewOn(nil, store.Options{}), "NewOn of a nil pointer": store.NewOn(nilBackend, store.Options{})} {
		try := func(what string, want error, call func() error) {
			t.Helper()
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: %s panicked: %v", name, what, r)
				}
			}()
			if err := call(); !errors.Is(err, want) {
				t.Errorf("%s: %s: %v; want %v", name, what, err, want)
			}
		}
		ctx := t.Context()
		try("Stats", store.ErrNoSessionsRoot, func() error {
			st, err := s.Stats(ctx, store.StatsOptions{})
			if st != nil {
				t.Errorf("%s: Stats gave figures: %+v", name, st)
			}
			return err
		})
		try("CheckRoot", store.ErrNoBackend, func() error {
			return s.CheckRoot(store.Session{Ticket: key, Root: "/srv/sessions", Key: key})
		})
		try("CheckRoot of a ticket with no id", store.ErrNoBackend, func() error {
			return s.CheckRoot(store.Session{Key: key, Reason: gates.Absent})
		})
		try("Inspect", store.ErrNoSessionsRoot, func() error { return s.Inspect(0, nil) })
		try("Check", store.ErrNoSessionsRoot, func() error {
			_, err := s.Check(ctx, store.CheckOptions{}, nil)
			return err
		})
		try("ReapWith", store.ErrNoSessionsRoot, func() error {
			_, err := s.ReapWith(ctx, store.ReapOptions{})
			return err
		})
		try("RollForward", store.ErrNoSessionsRoot, func() error {
			_, err := s.RollForward(key)
			return err
		})
		try("Accept", store.ErrNoSessionsRoot, func() error {
			_, err := s.Accept(key)
			return err
		})
		try("Quarantine", store.ErrNoSessionsRoot, func() error {
			_, err := s.Quarantine(key)
			return err
		})
	}
}

// One Session promoted from many goroutines at once (a worker's retry
// sent while its first try still runs) is one promotion: each other try
// is ErrJobDirBusy with promote-failed, or a repeat of it, never a second
// generation; the retry after them all repeats it.
func TestOneSessionPromotedFromManyGoroutinesIsOnePromotion(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/many-tries")
	for round := range 5 {
		jobDir := filepath.Join(base, fmt.Sprint("job-", round))
		sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), round+1, "go on"); err != nil {
			t.Fatal(err)
		}
		results := make([]store.PromoteResult, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i], errs[i] = s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}) })
		}
		wg.Wait()
		first := 0
		for i, res := range results {
			switch {
			case res.Promoted && !res.Repeat && errs[i] == nil:
				first++
			case res.Promoted && res.Repeat && errs[i] == nil:
			case errors.Is(errs[i], store.ErrJobDirBusy) && res.Reason == gates.PromoteFailed && !res.Promoted:
			default:
				t.Errorf("round %d, try %d: %+v, %v; want the promotion, a repeat of it, or ErrJobDirBusy", round, i, res, errs[i])
			}
		}
		again, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"})
		if first != 1 || err != nil || !again.Repeat || again.Gen != uint64(round+1) {
			t.Fatalf("round %d: %d first promotions, then the retry %+v, %v; want one, and the retry a repeat of gen %d", round, first, again, err, round+1)
		}
	}
}

// The figures Stats returns are the caller's: a dashboard that rescales a
// distribution's Bounds in place (bytes to KiB) changes no later walk's
// buckets. Before, every Stats shared the package's bounds: the second
// walk below bucketed by the rescaled bounds, and put the 1 KiB of
// transcript of each key in another bucket than the first walk did.
func TestStatsFiguresAreTheCallers(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		key := store.Key("github", "acme/widget", fmt.Sprint("pi/stats-", i))
		jobDir := filepath.Join(base, fmt.Sprint("job-", i))
		if _, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir); err != nil {
			t.Fatal(err)
		}
		if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
			t.Fatal(err)
		}
		sess, err := store.ReadTicket(jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
			t.Fatalf("promote: %+v, %v", res, err)
		}
	}
	bytesBounds, chainBounds, pctBounds := store.StatBounds()
	first, err := s.Stats(t.Context(), store.StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := slices.Clone(first.Bytes.Counts)
	for _, d := range []*store.Distribution{first.Bytes, first.ResumeChain, first.ContextPct} {
		for i := range d.Bounds {
			d.Bounds[i] /= 1024
		}
	}
	again, err := s.Stats(t.Context(), store.StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []*store.Distribution{again.Bytes, again.ResumeChain, again.ContextPct} {
		if want := [][]int64{bytesBounds, chainBounds, pctBounds}[i]; !slices.Equal(d.Bounds, want) {
			t.Errorf("a later walk's bounds changed with the caller's copy: %v, want %v", d.Bounds, want)
		}
	}
	if b, _, _ := store.StatBounds(); !slices.Equal(b, bytesBounds) {
		t.Errorf("StatBounds changed with the caller's copy: %v, want %v", b, bytesBounds)
	}
	if !slices.Equal(again.Bytes.Counts, counts) {
		t.Errorf("a later walk bucketed the same keys as %v, the first as %v", again.Bytes.Counts, counts)
	}
}

// A resolve that cannot say where a path leads names which path it is:
// the store's directory (a root that holds a NUL byte, which no system
// call takes) or the job dir. Before, both read "<job dir> cannot be told
// apart from the store's directory <root> (invalid argument)", which sent
// a worker looking at a job dir that was fine.
func TestAResolveThatCannotResolveAPathNamesIt(t *testing.T) {
	base := t.TempDir()
	key := store.Key("github", "acme/widget", "pi/unresolvable")
	job := store.Job{PiVersion: "0.58.3", Venue: "local"}
	bad, err := store.New(filepath.Join(base, "sess\x00ions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s      *store.Store
		jobDir string
		says   string
	}{
		{bad, filepath.Join(base, "job"), "where the store's directory leads is not known"},
		{good, filepath.Join(base, "jo\x00b"), "where the job dir leads is not known"},
	} {
		_, err := c.s.Resolve(key, job, c.jobDir)
		if !errors.Is(err, store.ErrJobDirInStore) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("resolve of %q on %q: %v; want ErrJobDirInStore saying %q", c.jobDir, c.s.Root(), err, c.says)
		}
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("%d entries made by the refused resolves, want none", len(ents))
	}
}

// A Session resolved with a relative job dir names it absolute, so that
// its promote finds the run from any working directory (a worker that
// keeps its Sessions as JSON, or changed directory since). Before, it kept
// the relative path: a promote from another working directory looked for
// the run there, and was absent, no error, the run whole in its job dir.
func TestASessionResolvedWithARelativeJobDirPromotesFromAnywhere(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"here", "elsewhere"} {
		if err := os.Mkdir(filepath.Join(base, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(base, "here"))
	key := store.Key("github", "acme/widget", "pi/relative")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, "job")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "here", "job"); filepath.Clean(sess.JobDir) != want {
		t.Errorf("the Session's job dir is %q, want %q", sess.JobDir, want)
	}
	if err := appendTurn(filepath.Join("job", store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "elsewhere"))
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
		t.Errorf("the promote from another working directory: %+v, %v; want promoted", res, err)
	}
}

// A relative job dir through a link and "..", as the kernel takes it
// (the link's target's parent), is the one the Session names: it is made
// absolute from the working directory, not cleaned, which would drop the
// link and its ".." and name another directory, where a promote from
// elsewhere found no run (absent, the run whole where the kernel put it).
func TestASessionResolvedWithARelativeJobDirThroughALinkPromotesFromAnywhere(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"here", "elsewhere", filepath.Join("other", "a")} {
		if err := os.MkdirAll(filepath.Join(base, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "other", "a"), filepath.Join(base, "here", "l")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "here"))
	key := store.Key("github", "acme/widget", "pi/relative-link")
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, "l"+string(filepath.Separator)+".."+string(filepath.Separator)+"job") // not cleaned
	if err != nil {
		t.Fatal(err)
	}
	// Where the kernel made it: beside the link's target.
	job := filepath.Join(base, "other", "job")
	if err := appendTurn(filepath.Join(job, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "elsewhere"))
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
		t.Errorf("the promote from another working directory of a Session whose job dir is %q: %+v, %v; want promoted", sess.JobDir, res, err)
	}
}

// A reap's causes reach a Go caller as errors, for errors.Is: an expired
// key holding what is not the store's (ErrForeignEntry, the key in
// Refused), and a reap-owned dir a promotion landed in whose key is taken
// again (ErrReapedKeyExists); Skipped keeps their text, as the CLI prints
// it. Before, Skipped's text was all a caller had: errors.Is could tell
// neither.
func TestAReapsCausesAreErrors(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s, err := store.New(root, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	promote := func(key string) {
		t.Helper()
		jobDir := filepath.Join(t.TempDir(), "job")
		sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
			t.Fatal(err)
		}
		if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil || !res.Promoted {
			t.Fatalf("promote %s: %+v, %v", key, res, err)
		}
	}
	foreign := store.Key("github", "acme/widget", "pi/foreign")
	promote(foreign)
	if err := os.Mkdir(filepath.Join(root, foreign, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A reap killed after its rename, a promotion landed in the dir it
	// moved aside, and the key's name taken again by a dir with a file.
	taken := store.Key("github", "acme/widget", "pi/taken")
	promote(taken)
	aside := store.ReapedPrefix + taken + "-00000000000000ee"
	if err := os.Rename(filepath.Join(root, taken), filepath.Join(root, aside)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, taken), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, taken, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * 24 * time.Hour)
	for _, dry := range []bool{true, false} {
		res, err := s.ReapWith(t.Context(), store.ReapOptions{DryRun: dry})
		if err != nil || !slices.Equal(res.Refused, []string{foreign}) {
			t.Fatalf("reap (dry run %v): %+v, %v; want %s refused", dry, res, err, foreign)
		}
		for name, want := range map[string]error{foreign: store.ErrForeignEntry, aside: store.ErrReapedKeyExists} {
			cause := res.Causes[name]
			if !errors.Is(cause, want) {
				t.Errorf("reap (dry run %v): the cause of %s is %v; want %v", dry, name, cause, want)
			}
			if cause != nil && res.Skipped[name] != cause.Error() {
				t.Errorf("reap (dry run %v): %s skipped for %q, its cause says %q", dry, name, res.Skipped[name], cause)
			}
		}
		if len(res.Causes) != len(res.Skipped) {
			t.Errorf("reap (dry run %v): causes %v for skipped %v", dry, res.Causes, res.Skipped)
		}
	}
}
