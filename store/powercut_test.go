package store

import (
	"errors"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/fsat"
)

// powerCut is a durability journal: the store's own writes go to disk as
// usual, and cut() then takes back everything a power failure could lose:
// file data written since the file's last fsync, and every create or
// rename in a directory since that directory's last fsync.
type powerCut struct {
	mu      sync.Mutex
	synced  map[string]int64 // path -> size at its last fsync; -1 never synced
	renames []undoRename     // since the last directory fsync, oldest first
	created []string         // since the last directory fsync
}

type undoRename struct {
	from, to string
	prev     []byte // what was at to before the rename; nil when nothing
}

func newPowerCut() *powerCut { return &powerCut{synced: map[string]int64{}} }

func (p *powerCut) createTemp(dir *os.File, name string) (*os.File, error) {
	f, err := diskWrites{}.createTemp(dir, name)
	if err == nil {
		p.mu.Lock()
		p.synced[f.Name()] = -1
		p.created = append(p.created, f.Name())
		p.mu.Unlock()
	}
	return f, err
}

func (p *powerCut) syncFile(f *os.File) error {
	err := diskWrites{}.syncFile(f)
	if err == nil {
		fi, serr := f.Stat()
		if serr != nil {
			return serr
		}
		p.mu.Lock()
		p.synced[f.Name()] = fi.Size()
		p.mu.Unlock()
	}
	return err
}

func (p *powerCut) rename(dir *os.File, from, to string) error {
	fromPath, toPath := fsat.Join(dir, from), fsat.Join(dir, to)
	prev, err := os.ReadFile(toPath)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if err := (diskWrites{}).rename(dir, from, to); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renames = append(p.renames, undoRename{fromPath, toPath, prev})
	if n, ok := p.synced[fromPath]; ok {
		delete(p.synced, fromPath)
		p.synced[toPath] = n
	}
	return nil
}

func (p *powerCut) syncDir(dir *os.File) error {
	err := diskWrites{}.syncDir(dir)
	if err == nil {
		p.mu.Lock()
		p.renames, p.created = nil, nil
		p.mu.Unlock()
	}
	return err
}

// cut simulates the power failure and the reboot.
func (p *powerCut) cut(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for path, n := range p.synced {
		if n < 0 {
			n = 0
		}
		if err := os.Truncate(path, n); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for i := len(p.renames) - 1; i >= 0; i-- {
		r := p.renames[i]
		if err := os.Rename(r.to, r.from); err != nil {
			t.Fatal(err)
		}
		if r.prev != nil {
			if err := os.WriteFile(r.to, r.prev, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range p.created {
		os.Remove(c)
	}
	p.synced, p.renames, p.created = map[string]int64{}, nil, nil
}

// TestPowerCutAtEveryStep cuts the power at every write boundary of a
// promotion of "after" over an acknowledged "before". Whatever the point,
// an acknowledged promotion is never lost and the key never resumes what
// its record does not describe; a promotion that committed is rolled
// forward by the next writer.
func TestPowerCutAtEveryStep(t *testing.T) {
	for _, p := range []FaultPoint{FaultAfterTempWrite, FaultAfterTempSync, FaultAfterCommit, FaultAfterRename, FaultAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			journal := newPowerCut()
			s.disk = journal
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
			s.opts.Fault = func(q FaultPoint) error {
				if q == p {
					return errors.New("power cut")
				}
				return nil
			}
			res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			s.opts.Fault = nil
			journal.cut(t)

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
