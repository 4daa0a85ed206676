package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/durable"
	"sessdb/internal/durable/powercut"
	"sessdb/store"
)

// A worker that finds the dir's mark, put there by another worker of its
// fleet that has not fsynced the dir yet (between WriteMark's rename and
// its dir fsync), and promotes into a key dir that was there before:
// once its promotion is acknowledged, a power cut in any mode leaves the
// mark. Else the dir comes back unmarked under an acknowledged generation,
// and the first writer of another fleet on it marks it its own and sweeps
// this fleet's transcripts. Before, the worker took the mark it found for
// durable: the plain cut (nothing-lands) took it back.
func TestAMarkAWriterFoundIsDurableOnceItsWriteIs(t *testing.T) {
	f, parent, j := unsyncedMarkFixture(t, "durable")
	g := f.otherFleet(f.c, f.prefix)                     // a worker of the same fleet, not yet claimed
	g.run(store.Key("github", "mark", "durable"), "two") // acknowledged
	markSurvivesEveryCut(t, j, parent)
}

// unsyncedMarkFixture is a fleet with a key (github/mark/name) promoted,
// on a dir from before marks, or whose mark an operator removed (the
// remedy docs/fleet.md gives): its key dir is there, durable. Another
// worker of the fleet has then marked the dir through the journal it
// returns, up to WriteMark's rename (markUnsynced): the mark is in
// place, its dir not fsynced. The journal is the shared storage's until
// the test ends.
func unsyncedMarkFixture(t *testing.T, name string) (f *fixture, parent string, j *powercut.Journal) {
	t.Helper()
	f, parent = powerFixture(t)
	f.run(store.Key("github", "mark", name), "one")
	if err := os.Remove(filepath.Join(f.dir, shared.MarkName)); err != nil {
		t.Fatal(err)
	}
	id, err := f.b.meta.FleetID(t.Context(), false)
	if err != nil || id == "" {
		t.Fatalf("the fleet's ID: %q, %v", id, err)
	}
	j = powercut.New()
	t.Cleanup(sharedfs.Use(j))
	markUnsynced(t, j, f.dir, id, f.prefix)
	return f, parent, j
}

// markSurvivesEveryCut fails t unless every power cut j can image keeps
// the dir's mark.
func markSurvivesEveryCut(t *testing.T, j *powercut.Journal, parent string) {
	t.Helper()
	for _, img := range j.Images(t, parent) {
		if _, err := os.Lstat(filepath.Join(img.Dir, "t", shared.MarkName)); err != nil {
			t.Errorf("cut after an acknowledged promotion (%s, lost %v): the mark: %v; want it there", img.Mode, img.Lost, err)
		}
	}
}

// markUnsynced is another worker's WriteMark of the mark (id, prefix) in
// dir up to its rename, through the journal j: the mark is in place, its
// dir not fsynced.
func markUnsynced(t *testing.T, j *powercut.Journal, dir, id, prefix string) {
	t.Helper()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tmp := shared.MarkName + ".tmp-0123456789abcdef"
	w, err := j.CreateTemp(root, tmp)
	if err == nil {
		_, err = fmt.Fprintf(w, "sessdb fleet mark 1\nid %s\nprefix %s\n", id, strconv.Quote(prefix))
	}
	if err == nil {
		err = j.SyncFile(w)
	}
	w.Close()
	if err == nil {
		err = j.RenameNoReplaceAtomic(root, tmp, shared.MarkName)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m, found, err := shared.ReadMark(dir); err != nil || !found || m.ID != id {
		t.Fatalf("the other worker's mark: %+v, %v, %v", m, found, err)
	}
}

// A Backend whose audit (a check, a reap's dry run) found the dir's mark,
// put there by another worker of its fleet that has not fsynced the dir
// yet, and whose first writer then promotes: the writer, which asks etcd
// nothing more, fsyncs the mark the audit found (SyncMark), so once its
// promotion is acknowledged a power cut in any mode leaves the mark, as
// for a writer that found the mark itself (above). The audit itself
// fsyncs nothing (TestAnAuditOfAMarkedDirFsyncsNothing).
func TestAMarkAnAuditFoundIsDurableOnceTheWritersWriteIs(t *testing.T) {
	for _, audit := range []string{"check", "reap --dry-run"} {
		t.Run(audit, func(t *testing.T) {
			f, parent, j := unsyncedMarkFixture(t, "audit-durable")
			g := f.otherFleet(f.c, f.prefix) // a worker of the same fleet, not yet claimed
			var err error
			if audit == "check" {
				_, err = g.b.Check(t.Context(), CheckOptions{}, nil)
			} else {
				_, err = g.b.Reap(t.Context(), ReapOptions{TTL: time.Hour, DryRun: true})
			}
			if err != nil || !g.b.matched.Load() || g.b.claimed.Load() {
				t.Fatalf("the audit: %v, matched %v, claimed %v; want it to have found the mark its fleet's, and claimed nothing", err, g.b.matched.Load(), g.b.claimed.Load())
			}
			g.run(store.Key("github", "mark", "audit-durable"), "two") // acknowledged
			markSurvivesEveryCut(t, j, parent)
		})
	}
}

// roDisk is a read-only mount as the seam sees it: every fsync of a
// directory fails.
type roDisk struct{ durable.Disk }

func (roDisk) SyncDir(dir *os.File) error {
	return &os.PathError{Op: "fsync", Path: dir.Name(), Err: unix.EROFS}
}

// An audit of a marked dir (check, reap --dry-run, migrate --from etcd)
// writes nothing there, not even the fsync a writer makes of a mark it
// found: on a read-only mount of the dir (an operator's look at a backup)
// it still runs, and the same Backend's first writer, which asks etcd
// nothing more, still makes the mark durable (its fsync fails there).
func TestAnAuditOfAMarkedDirFsyncsNothing(t *testing.T) {
	f, _ := powerFixture(t)
	f.run(store.Key("github", "mark", "audit"), "one")
	g := f.otherFleet(f.c, f.prefix) // not yet claimed
	restore := sharedfs.Use(roDisk{})
	_, err := g.b.Check(t.Context(), CheckOptions{}, nil)
	if err != nil {
		t.Errorf("check of a marked dir on a read-only mount: %v; want it to run", err)
	}
	if _, err := g.b.Reap(t.Context(), ReapOptions{TTL: time.Hour, DryRun: true}); err != nil {
		t.Errorf("reap --dry-run of a marked dir on a read-only mount: %v; want it to run", err)
	}
	if err := g.b.Claim(t.Context()); !errors.Is(err, unix.EROFS) {
		t.Errorf("a writer's claim on the read-only mount: %v; want its fsync of the mark to fail", err)
	}
	restore()
	if err := g.b.Claim(t.Context()); err != nil {
		t.Errorf("the writer's claim again, the mount writable: %v", err)
	}
}
