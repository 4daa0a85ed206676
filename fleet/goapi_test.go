package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The fleet's Go API as a worker's code and an operator's tool use it:
// contexts, Close, one Backend shared by many goroutines.

const apiHeader = `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n"

var apiJob = store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}

// apiFleet opens a fleet of its own on c, and a store on it.
func apiFleet(t *testing.T, c *etcdtest.Cluster) (*fleet.Backend, *store.Store) {
	t.Helper()
	p := make([]byte, 8)
	rand.Read(p)
	b, err := fleet.Open(fleet.Config{
		Config:         apiConfig(c, "/sessdb/"+hex.EncodeToString(p)),
		TranscriptsDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
}

func apiConfig(c *etcdtest.Cluster, prefix string) etcdmeta.Config {
	return etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: prefix}
}

// apiPromote runs one job on key: resolve, the run appends line, promote.
func apiPromote(t *testing.T, s *store.Store, key, line string) (store.Session, store.PromoteResult) {
	t.Helper()
	jd := filepath.Join(t.TempDir(), "job")
	sess, err := s.Resolve(key, apiJob, jd)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(jd, store.StagedDirName, store.TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sess.Resume {
		f.WriteString(apiHeader)
	}
	f.WriteString(line + "\n")
	f.Close()
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: apiJob.PiVersion})
	if err != nil || !res.Promoted {
		t.Fatalf("promote %s: %+v %v", key, res, err)
	}
	return sess, res
}

func apiLine(marker string) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":%q}}`, marker, marker)
}

// A migration out of etcd that ctx ended while it listed the fleet is
// interrupted, as one ended between keys is, and as a sessions root's
// migration ended before its first key is: the CLI exits 130 on it, not
// 1 with the cancellation for a fault.
func TestFromEtcdEndedWhileListingIsInterrupted(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	apiPromote(t, s, store.Key("github", "acme/widget", "1"), apiLine("one"))
	for _, end := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"past its deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}},
	} {
		ctx, cancel := end.ctx()
		root := filepath.Join(t.TempDir(), "sessions")
		sum, err := fleet.FromEtcd(ctx, b, root, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
		cancel()
		if !errors.Is(err, ctx.Err()) || !sum.Interrupted || sum.Entries != 0 {
			t.Errorf("%s: %+v, %v; want ctx's error, interrupted before any key", end.name, sum, err)
		}
		if names, _ := os.ReadDir(root); len(names) != 0 {
			t.Errorf("%s: the root holds %v", end.name, names)
		}
	}
}

// A reap whose context ends before another holder lets go of an expired
// key's lock (a deadline shorter than the lock wait) returns ctx's error
// at the deadline, not at the lock wait's end, removes nothing, leaves no
// waiter's key in the lock's dir for the holder's successors to queue
// behind, and leaks no goroutine.
func TestReapWithADeadlineShorterThanTheLockWait(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	// b's client starts its lease keep-alive loops at its first lock, for
	// good: take one before counting, reaping a key of its own (a dry run
	// takes no lock).
	warm := store.Key("github", "acme/widget", "warm-up")
	apiPromote(t, s, warm, apiLine("one"))
	if res, err := b.Reap(t.Context(), fleet.ReapOptions{TTL: time.Nanosecond}); err != nil || len(res.Removed) != 1 {
		t.Fatalf("the warm-up reap = %+v, %v; want %s removed", res, err, warm)
	}
	key := store.Key("github", "acme/widget", "1")
	apiPromote(t, s, key, apiLine("one"))
	id, _ := b.ID()
	prefix := strings.TrimSuffix(id[len(b.Dir())+len(" (etcd prefix "):], ")")
	holder, err := etcdmeta.Open(apiConfig(c, prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	unlock, _, err := holder.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	before := etcdtest.Goroutines()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := b.Reap(ctx, fleet.ReapOptions{TTL: time.Nanosecond})
	// At the deadline (100 ms), not at the lock wait's end (10 s): half
	// the wait tells the two apart on a machine however loaded, where
	// 600 ms was a guess at its load.
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || len(res.Removed) != 0 || took > etcdmeta.DefaultLockWait/2 {
		t.Fatalf("reap = %+v, %v after %v; want the deadline's error at the deadline, nothing removed", res, err, took)
	}
	if leaked := etcdtest.StartedStillRunning(before, 30*time.Second); len(leaked) != 0 {
		t.Errorf("%d goroutines the reap started still run 30 s on:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	resp, err := c.Client(t).Get(t.Context(), prefix+"/lock/"+key+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the lock's dir holds %d keys (%v), want the holder's alone", len(resp.Kvs), err)
	}
	unlock()
	if sess, _ := resolveIn(t, s, key); sess.Reason != gates.Resumed {
		t.Errorf("the key after the reap: %s", sess.Reason)
	}
}

func resolveIn(t *testing.T, s *store.Store, key string) (store.Session, string) {
	t.Helper()
	jd := filepath.Join(t.TempDir(), "job")
	sess, err := s.Resolve(key, apiJob, jd)
	if err != nil {
		t.Fatal(err)
	}
	return sess, jd
}

// A walk that the caller's own deadline ended says so: ctx's error, not
// etcdmeta.ErrUnavailable, which is etcd's silence and which a Go caller
// takes for an outage to retry or alert on. Each walk's first etcd
// request here is cut short by a deadline already past. A cancel was
// already told apart (context.Canceled alone); a deadline was wrapped as
// "etcd unavailable: context deadline exceeded".
func TestWalksEndedByTheCallersDeadlineAreNotEtcdUnavailable(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	key := store.Key("github", "acme/widget", "1")
	apiPromote(t, s, key, apiLine("one"))
	legacyRoot := t.TempDir()
	if err := os.Mkdir(filepath.Join(legacyRoot, store.Key("github", "acme/widget", "2")), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	nothing := func(store.Finding) error { return nil }
	errs := map[string]error{}
	_, errs["reap"] = b.Reap(ctx, fleet.ReapOptions{TTL: time.Nanosecond})
	_, errs["check"] = b.Check(ctx, fleet.CheckOptions{}, nothing)
	_, errs["check --repair"] = b.Check(ctx, fleet.CheckOptions{Repair: true}, nothing)
	errs["dump"] = b.Inspect(ctx, fleet.InspectOptions{History: 1}, func(fleet.Report) error { return nil })
	errs["dump one key"] = b.Inspect(ctx, fleet.InspectOptions{Only: key}, func(fleet.Report) error { return nil })
	sum, err := fleet.FromEtcd(ctx, b, filepath.Join(t.TempDir(), "sessions"), fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
	errs["migrate --from-etcd"] = err
	if !sum.Interrupted {
		t.Errorf("migrate --from-etcd: %+v, want interrupted", sum)
	}
	sum, err = fleet.ToEtcd(ctx, legacyRoot, b, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
	errs["migrate --to-etcd"] = err
	if !sum.Interrupted {
		t.Errorf("migrate --to-etcd: %+v, want interrupted", sum)
	}
	for what, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, etcdmeta.ErrUnavailable) {
			t.Errorf("%s: %v; want the caller's deadline, not etcd unavailable", what, err)
		}
	}
}

// The fleet's walks take a nil ctx as context.Background(), as package
// store's do: each runs whole, and nothing panics. Before, each panicked
// (Inspect, Check, Reap and FromEtcd in the caller, at their listing;
// ToEtcd in its walk's goroutine, a crash the caller cannot recover).
func TestFleetWalksTakeANilContext(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	key := store.Key("github", "acme/widget", "1")
	apiPromote(t, s, key, apiLine("one"))
	var none context.Context
	errs := map[string]error{}
	_, errs["reap"] = b.Reap(none, fleet.ReapOptions{TTL: time.Hour})
	_, errs["check"] = b.Check(none, fleet.CheckOptions{}, func(store.Finding) error { return nil })
	reports := 0
	errs["dump"] = b.Inspect(none, fleet.InspectOptions{Verify: true}, func(fleet.Report) error { reports++; return nil })
	root := filepath.Join(t.TempDir(), "sessions")
	from, err := fleet.FromEtcd(none, b, root, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
	errs["migrate --from-etcd"] = err
	other, _ := apiFleet(t, c)
	to, err := fleet.ToEtcd(none, root, other, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
	errs["migrate --to-etcd"] = err
	for what, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if reports != 1 || from.Migrated != 1 || to.Migrated != 1 {
		t.Errorf("dump reported %d keys, migrate %+v and %+v: want the one key", reports, from, to)
	}
}

// A nil visit is no callback, as migrate's and the store's: the
// migrations' and check's summaries alone tell what they did. Each
// panicked on the nil function.
func TestFleetWalksTakeANilVisit(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	key := store.Key("github", "acme/widget", "1")
	apiPromote(t, s, key, apiLine("one"))
	ctx := context.Background()
	if _, err := b.Check(ctx, fleet.CheckOptions{}, nil); err != nil {
		t.Errorf("check: %v", err)
	}
	if err := b.Inspect(ctx, fleet.InspectOptions{}, nil); err != nil {
		t.Errorf("dump: %v", err)
	}
	root := filepath.Join(t.TempDir(), "sessions")
	from, err := fleet.FromEtcd(ctx, b, root, fleet.MigrateOptions{}, nil)
	if err != nil || from.Migrated != 1 {
		t.Errorf("migrate --from etcd: %+v, %v; want the key migrated", from, err)
	}
	other, _ := apiFleet(t, c)
	to, err := fleet.ToEtcd(ctx, root, other, fleet.MigrateOptions{}, nil)
	if err != nil || to.Migrated != 1 {
		t.Errorf("migrate --to etcd: %+v, %v; want the key migrated", to, err)
	}
}

// A FromEtcd that does nothing makes nothing: with the caller's ctx
// already ended (or etcd not answering) the listing fails, and no sessions
// root is made for it. The root was made before the listing, an empty
// directory left behind by a run that migrated nothing.
func TestFromEtcdThatDoesNothingMakesNoRoot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	apiPromote(t, s, store.Key("github", "acme/widget", "1"), apiLine("one"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	root := filepath.Join(t.TempDir(), "sessions")
	sum, err := fleet.FromEtcd(ctx, b, root, fleet.MigrateOptions{}, nil)
	if !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Entries != 0 {
		t.Fatalf("from etcd, ctx ended: %+v, %v; want interrupted, nothing done", sum, err)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("from etcd, ctx ended, made the sessions root (lstat: %v)", err)
	}
	c.Stop(0)
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := fleet.FromEtcd(short, b, root, fleet.MigrateOptions{}, nil); err == nil {
		t.Fatal("from etcd with etcd stopped: no error")
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("from etcd, etcd stopped, made the sessions root (lstat: %v)", err)
	}
}

// Close is safe however a worker's code reaches it: twice, and on the nil
// Backend Open returns with its error (a Close deferred before the error
// is looked at). A Backend used after Close says so, a fault for Resolve
// and promote-failed for Promote, never a verdict. Before, Close of the
// nil Backend panicked (nil pointer dereference).
func TestCloseTwiceAndOfOpensNilAndUseAfterClose(t *testing.T) {
	b, err := fleet.Open(fleet.Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}}, TranscriptsDir: filepath.Join(t.TempDir(), "missing")})
	if b != nil || !errors.Is(err, fleet.ErrNoTranscriptsDir) {
		t.Fatalf("open of a missing dir: %v, %v", b, err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Close of Open's nil Backend panicked: %v", r)
			}
		}()
		if err := b.Close(); err != nil {
			t.Errorf("Close of Open's nil Backend: %v", err)
		}
	}()
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	key := store.Key("github", "acme/widget", "pi/closed")
	sess, _ := apiPromote(t, s, key, apiLine("first"))
	for i := range 2 {
		if err := b.Close(); err != nil {
			t.Errorf("Close %d: %v", i+1, err)
		}
	}
	jd := filepath.Join(t.TempDir(), "job")
	if got, err := s.Resolve(key, apiJob, jd); err == nil || got.Reason != "" {
		t.Errorf("resolve after Close: %+v, %v; want a fault", got, err)
	}
	if _, err := os.Lstat(filepath.Join(jd, store.TicketName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the ticket of a resolve after Close: %v; want none", err)
	}
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: apiJob.PiVersion}); err == nil || res.Reason != gates.PromoteFailed {
		t.Errorf("promote after Close: %+v, %v; want promote-failed", res, err)
	}
}

// Close of a Backend that Open did not make (a zero one, as a struct
// field never set) does nothing, as Close of Open's nil Backend does:
// there is no client to close.
func TestCloseOfAZeroBackendDoesNothing(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Close of a zero Backend panicked: %v", r)
		}
	}()
	var b fleet.Backend
	if err := b.Close(); err != nil {
		t.Errorf("Close of a zero Backend: %v", err)
	}
}

// Every other method of a Backend Open did not make (a zero one, a struct
// field never set; or the nil one Open returns with its error) says so,
// store.ErrNoBackend, and touches nothing, as a store made on no backend
// does; a store made on it (store.NewOn) answers as one. Before, the zero
// Backend's ID, SameID, View and Inspect panicked (a nil etcd client), as
// did a resolve of a store on it; its Begin, Claim, Check, Reap, ToEtcd
// and FromEtcd said the transcripts dir "" was unavailable
// (shared.ErrDirUnavailable, which IsUnreachable takes for the storage
// failing); and every method of the nil one panicked but Close.
func TestEveryMethodOfABackendOpenDidNotMakeSaysSo(t *testing.T) {
	key := store.Key("github", "acme/widget", "pi/not-opened")
	for name, b := range map[string]*fleet.Backend{"zero": {}, "nil": nil} {
		try := func(what string, call func() error) {
			t.Helper()
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s Backend: %s panicked: %v", name, what, r)
				}
			}()
			if err := call(); !errors.Is(err, store.ErrNoBackend) || fleet.IsUnreachable(err) {
				t.Errorf("%s Backend: %s: %v; want store.ErrNoBackend", name, what, err)
			}
		}
		ctx := t.Context()
		base := t.TempDir()
		try("ID", func() error { _, err := b.ID(); return err })
		try("SameID", func() error {
			same, err := b.SameID("/srv/transcripts (etcd prefix /sessdb)")
			if same {
				t.Errorf("%s Backend: SameID said same", name)
			}
			return err
		})
		try("View", func() error {
			v, err := b.View(key, gates.Bounds{})
			if v != nil {
				t.Errorf("%s Backend: View gave a view", name)
			}
			return err
		})
		try("Begin", func() error {
			x, err := b.Begin(key, store.Base{})
			if x != nil {
				t.Errorf("%s Backend: Begin gave a txn", name)
			}
			return err
		})
		try("Claim", func() error { return b.Claim(ctx) })
		try("Check --repair", func() error {
			_, err := b.Check(ctx, fleet.CheckOptions{Repair: true}, nil)
			return err
		})
		try("Inspect", func() error { return b.Inspect(ctx, fleet.InspectOptions{}, nil) })
		try("Stats", func() error {
			st, err := b.Stats(ctx, fleet.StatsOptions{Window: time.Hour})
			if st != nil {
				t.Errorf("%s Backend: Stats gave figures", name)
			}
			return err
		})
		try("Reap", func() error {
			res, err := b.Reap(ctx, fleet.ReapOptions{TTL: time.Hour})
			if len(res.Removed) != 0 {
				t.Errorf("%s Backend: Reap removed %v", name, res.Removed)
			}
			return err
		})
		// A sessions root with a key in it: ToEtcd leaves it whole.
		root := filepath.Join(base, "sessions")
		if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, key, store.TranscriptName), []byte(apiHeader), 0o600); err != nil {
			t.Fatal(err)
		}
		try("ToEtcd", func() error {
			_, err := fleet.ToEtcd(ctx, root, b, fleet.MigrateOptions{}, nil)
			return err
		})
		if got, err := os.ReadFile(filepath.Join(root, key, store.TranscriptName)); err != nil || string(got) != apiHeader {
			t.Errorf("%s Backend: ToEtcd touched the key's transcript: %q, %v", name, got, err)
		}
		fromRoot := filepath.Join(base, "from")
		try("FromEtcd", func() error {
			_, err := fleet.FromEtcd(ctx, b, fromRoot, fleet.MigrateOptions{}, nil)
			return err
		})
		if _, err := os.Lstat(fromRoot); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s Backend: FromEtcd made its root: %v", name, err)
		}
		if d := b.Dir(); d != "" {
			t.Errorf("%s Backend: Dir is %q, want none", name, d)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s Backend: Close panicked: %v", name, r)
				}
			}()
			if err := b.Close(); err != nil {
				t.Errorf("%s Backend: Close: %v; want nothing done", name, err)
			}
		}()
		// A store on it: a resolve makes no job dir, a promote leaves the
		// staged file.
		s := store.NewOn(b, store.Options{})
		jd := filepath.Join(base, "job")
		try("a store's Resolve", func() error { _, err := s.Resolve(key, apiJob, jd); return err })
		if _, err := os.Lstat(jd); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s Backend: a resolve made the job dir: %v", name, err)
		}
		// The job dir the working directory: the Backend's Dir, "", is
		// no directory the job dir could be told apart from.
		t.Chdir(base)
		try("a store's Resolve into the working directory", func() error { _, err := s.Resolve(key, apiJob, "."); return err })
		if _, err := os.Lstat(filepath.Join(base, store.StagedDirName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s Backend: a resolve into the working directory staged: %v", name, err)
		}
		staged := filepath.Join(jd, store.StagedDirName, store.TranscriptName)
		if err := os.MkdirAll(filepath.Dir(staged), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(staged, []byte(apiHeader), 0o600); err != nil {
			t.Fatal(err)
		}
		sess := store.Session{Key: key, Ticket: key, Root: "/srv/transcripts (etcd prefix /sessdb)", JobDir: jd, Reason: gates.Absent}
		// As a store made on none: no reason (promote-failed would promise
		// that the same Session's retry promotes), for a ticket of today
		// and for one from before the job contract, which names no root.
		for _, sess := range []store.Session{sess, {Key: key, JobDir: jd, Reason: gates.Absent}} {
			try("a store's Promote", func() error {
				res, err := s.Promote(sess, store.PromoteRequest{PiVersion: apiJob.PiVersion})
				if res.Promoted || res.Reason != "" {
					t.Errorf("%s Backend: a store's Promote of ticket %q: promoted %v, reason %q; want not, no reason, as a store on none", name, sess.Ticket, res.Promoted, res.Reason)
				}
				return err
			})
			try("a store's CheckRoot", func() error { return s.CheckRoot(sess) })
		}
		if _, err := os.Lstat(staged); err != nil {
			t.Errorf("%s Backend: a promote took the staged file: %v", name, err)
		}
	}
}
