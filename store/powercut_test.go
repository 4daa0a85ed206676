package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// TestPowerCutAtEveryStep cuts the power at every write boundary of a
// promotion of "after" over an acknowledged "before". Whatever the point,
// an acknowledged promotion is never lost and the key never resumes what
// its record does not describe; a promotion that committed is rolled
// forward by the next writer.
func TestPowerCutAtEveryStep(t *testing.T) {
	for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			journal := powercut.New()
			s.disk = diskWrites{journal}
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
			faults.Set(func(q faults.Point) error {
				if q == p {
					return errors.New("power cut")
				}
				return nil
			})
			res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			faults.Set(nil)
			journal.Cut(t)

			checkDescribed(t, s, root, testKey)
			if _, err := s.RollForward(testKey); err != nil {
				t.Fatal(err)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume {
				t.Fatalf("after the power cut and roll-forward the key is cold (%s): the acknowledged %q is lost", got.Reason, "before")
			}
			marker := markerOf(data, 1)
			if res.Promoted && marker != "after" {
				t.Fatalf("promotion acknowledged at %s, but after the power cut the key holds %q", p, marker)
			}
			if marker != "before" && marker != "after" {
				t.Fatalf("key holds %q", marker)
			}
			assertNoTemps(t, root, testKey)
		})
	}
}

// TestPowerCutAfterAFirstPromotion cuts the power right after a key's
// first promotion is acknowledged: the key dir it made must be durable by
// then (the root fsynced after its mkdir), or the cut takes the key dir,
// and the acknowledged transcript with it.
func TestPowerCutAfterAFirstPromotion(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	journal := powercut.New()
	s.disk = diskWrites{journal}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	firstSurvivesCut(t, s, root, journal)
}

// madeDirs is the journal, noting the dirs made through the seam.
type madeDirs struct {
	*powercut.Journal
	made map[string]bool
}

func (m *madeDirs) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	made, err := m.Journal.Mkdir(dir, name, perm)
	if made {
		m.made[filepath.Join(dir.Name(), name)] = true
	}
	return made, err
}

// TestPowerCutAfterAFirstPromotionIntoANewRoot: a promotion into a
// sessions root that does not exist yet makes the root and its missing
// parents. Each must be made through the durability seam, its name made
// durable by an fsync of the dir it is in before the promotion is
// acknowledged, or a power cut takes the root, and every key promoted into
// it with it.
func TestPowerCutAfterAFirstPromotionIntoANewRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "var", "lib", "sessions")
	s, err := New(root, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	journal := &madeDirs{powercut.New(), map[string]bool{}}
	s.disk = diskWrites{journal}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	for p := filepath.Join(root, testKey); p != base; p = filepath.Dir(p) {
		if !journal.made[p] {
			t.Errorf("%s was made behind the durability seam: nothing makes its name durable", p)
		}
	}
	firstSurvivesCut(t, s, root, journal)
}

// TestPowerCutAfterAPromotionIntoARivalsNewKeyDir: another process made
// the key dir for its own first promotion and has not fsynced the root yet
// (descheduled between its mkdir and the fsync) when this promotion finds
// the dir there, lands in it and is acknowledged. The acknowledgement
// must not wait on the rival's fsync: a power cut before it takes the
// key dir's name, and this promotion with it.
func TestPowerCutAfterAPromotionIntoARivalsNewKeyDir(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	journal := powercut.New()
	s.disk = diskWrites{journal}
	rivalMkdir(t, journal, root, testKey)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	firstSurvivesCut(t, s, root, journal)
}

// TestPowerCutAfterAPromotionIntoARivalsNewRoot: another process made the
// sessions root for its own first promotion and has not fsynced the dir
// it is in yet when this promotion finds the root there, makes its key dir
// in it and is acknowledged. A power cut before the rival's fsync takes
// the root's name, and this promotion with it, unless this one makes the
// name durable itself.
func TestPowerCutAfterAPromotionIntoARivalsNewRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	s, err := New(root, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	journal := powercut.New()
	s.disk = diskWrites{journal}
	rivalMkdir(t, journal, base, "sessions")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	firstSurvivesCut(t, s, root, journal)
}

// rivalMkdir makes dir/name through the journal, as another process's
// first promotion does, and leaves it there without the fsync that
// follows.
func rivalMkdir(t *testing.T, journal *powercut.Journal, dir, name string) {
	t.Helper()
	d, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if made, err := journal.Mkdir(d, name, 0o700); err != nil || !made {
		t.Fatalf("the rival's mkdir: %v %v", made, err)
	}
}

// firstSurvivesCut cuts the power and fails t unless testKey still
// resumes on its acknowledged first promotion ("first").
func firstSurvivesCut(t *testing.T, s *Store, root string, journal interface{ Cut(testing.TB) }) {
	t.Helper()
	journal.Cut(t)
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || markerOf(data, 1) != "first" {
		t.Fatalf("after the power cut the key is {resume %v, %s}: its acknowledged first promotion is lost", got.Resume, got.Reason)
	}
}

// TestPowerCutAfterAPromotionUnderARivalsNewParent: the rival's first
// promotion had made only a parent of the sessions root yet, and not
// fsynced the dir that parent is in, when this promotion found the parent
// there and made the root in it. Its acknowledgement must not wait on the
// rival's fsync either.
func TestPowerCutAfterAPromotionUnderARivalsNewParent(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "var", "sessions")
	s, err := New(root, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	journal := powercut.New()
	s.disk = diskWrites{journal}
	rivalMkdir(t, journal, base, "var")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	firstSurvivesCut(t, s, root, journal)
}
