package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dir from before marks, holding a fleet's transcripts, and a second
// fleet (its prefix a slip of the first's) whose writer comes to it
// first: the second fleet has no record, so none of its writers (a reap,
// check --repair, a promote, migrate --to etcd) marks the dir or sweeps
// anything in it (ErrOtherFleet), and none of its audits or dry runs
// (check, reap --dry-run, migrate --to etcd --dry-run, migrate --from
// etcd) takes it for its dir either; the first fleet's writer then marks it,
// and the second fleet is refused by the mark from then on. Before, the
// second fleet's reap marked the dir its own and swept the first's
// transcript as an orphan ('Swept:[<key>/0000000000000001-….jsonl]'), and
// the first fleet was then refused as another fleet's on its own dir.
func TestAFleetWithNoRecordNeverMarksADirOfKeyDirs(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a := newFixture(t, c)
	key := store.Key("github", "unmarked", "before marks")
	a.run(key, "a's")
	// A fleet from before marks: no mark, no ID.
	if err := os.Remove(filepath.Join(a.dir, shared.MarkName)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(t).Delete(t.Context(), a.b.meta.FleetIDKey()); err != nil {
		t.Fatal(err)
	}
	b := a.otherFleet(c, strings.TrimPrefix(a.prefix, "/"))
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	ctx := t.Context()
	steps := []struct {
		name string
		run  func() error
	}{
		{"reap", func() error { _, err := b.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later}); return err }},
		{"check --repair", func() error { _, err := b.b.Check(ctx, CheckOptions{Repair: true, Now: later}, nil); return err }},
		{"migrate --to etcd", func() error { _, err := ToEtcd(ctx, t.TempDir(), b.b, MigrateOptions{}, nil); return err }},
		{"claim", func() error { return b.b.Claim(ctx) }},
		// The audits and dry runs refuse it too: their plans are the
		// runs' (before, each went on: check called a's transcript an
		// orphan, reap --dry-run planned to sweep it).
		{"check", func() error { _, err := b.b.Check(ctx, CheckOptions{Now: later}, nil); return err }},
		{"reap --dry-run", func() error {
			_, err := b.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later, DryRun: true})
			return err
		}},
		{"migrate --to etcd --dry-run", func() error {
			_, err := ToEtcd(ctx, t.TempDir(), b.b, MigrateOptions{DryRun: true}, nil)
			return err
		}},
		{"migrate --from etcd", func() error {
			_, err := FromEtcd(ctx, b.b, filepath.Join(t.TempDir(), "root"), MigrateOptions{}, nil)
			return err
		}},
		{"promote", func() error {
			sess, _ := b.job(store.Key("github", "unmarked", "b's"), "b's")
			res, err := b.promote(sess)
			if res.Promoted || res.Reason != gates.PromoteFailed {
				t.Errorf("b's promote = %+v; want promote-failed", res)
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := s.run(); !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), "has no record") {
			t.Errorf("%s by a fleet with no record, on an unmarked dir of key dirs: %v; want ErrOtherFleet saying why", s.name, err)
		}
		if _, err := os.Lstat(filepath.Join(a.dir, shared.MarkName)); !os.IsNotExist(err) {
			t.Fatalf("after b's %s: the mark: %v; want none", s.name, err)
		}
	}
	if id, err := b.b.meta.FleetID(ctx, false); err != nil || id != "" {
		t.Errorf("b's ID after its refused writers: %q, %v; want none made", id, err)
	}
	if files := a.files(key); len(files) != 1 || files[0] != a.recordFile(key) {
		t.Fatalf("a's key holds %v; want its record's file %s", files, a.recordFile(key))
	}
	// The first fleet's writer, which has records, marks its dir.
	a2 := a.otherFleet(c, a.prefix)
	if res, err := a2.b.Reap(ctx, ReapOptions{TTL: 14 * 24 * time.Hour}); err != nil || len(res.Swept)+len(res.Removed) != 0 {
		t.Fatalf("a's reap = %+v, %v; want the dir marked, nothing removed", res, err)
	}
	if m, found, err := shared.ReadMark(a.dir); err != nil || !found || m.Prefix != a.prefix {
		t.Fatalf("the mark after a's reap: %+v, %v, %v; want a's", m, found, err)
	}
	if err := b.b.Claim(ctx); !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), "is marked") {
		t.Errorf("b's claim after a marked the dir: %v; want refused by the mark", err)
	}
	a.holds(key, "a's", 1)
}

// The first two workers of a new fleet: the second's claim finds no mark,
// and before it looks at the dir's key dirs the first has marked the dir
// and written its first file (a key dir, no record yet). The second is
// let in by the first's mark, never refused as a fleet with no record on
// a dir of key dirs.
func TestANewFleetsSecondWorkerFindsTheFirstsMark(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	second := f.otherFleet(c, f.prefix)
	atUnmarked, resume := make(chan struct{}), make(chan struct{})
	second.b.hook = func(p, _ string) error {
		if p == hookUnmarked {
			close(atUnmarked)
			<-resume
		}
		return nil
	}
	claimed := make(chan error, 1)
	go func() { claimed <- second.b.Claim(context.Background()) }()
	select {
	case <-atUnmarked:
	case err := <-claimed:
		t.Fatalf("the second worker's claim returned %v, never looking at the dir's key dirs", err)
	}

	written, commit := make(chan struct{}), make(chan struct{})
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			close(written)
			<-commit
		}
		return nil
	}
	promoted := make(chan error, 1)
	go func() {
		sess, _ := f.job(store.Key("github", "unmarked", "first"), "first")
		res, err := f.promote(sess)
		if err == nil && !res.Promoted {
			err = errors.New(string(res.Reason))
		}
		promoted <- err
	}()
	<-written
	close(resume)
	if err := <-claimed; err != nil {
		t.Errorf("the second worker's claim: %v; want it let in by the first's mark", err)
	}
	close(commit)
	if err := <-promoted; err != nil {
		t.Errorf("the first worker's promote: %v", err)
	}
}
