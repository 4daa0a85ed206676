package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A resolve that opened the key dir and was waiting for its shared lock
// while check --repair --quarantine held it must not hand over the
// quarantined transcript once it has the lock: the quarantine is there
// so that no resolve finds that dir (the key cold-starts as absent), and
// what the waiter would copy is a dir no longer at the key's name.
func TestQuarantineColdStartsAWaitingResolve(t *testing.T) {
	// The key's name is left empty, or a new key dir is made there (a
	// promotion's) before the waiter looks: the dir it opened is the
	// quarantined one either way, found at its quarantine name.
	for _, remade := range []bool{false, true} {
		t.Run(map[bool]string{false: "the name left empty", true: "a new key dir at the name"}[remade], func(t *testing.T) {
			s, root, quarantine := quarantineWithAWaiter(t)
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
			if remade {
				faults.Set(func(p faults.Point) error {
					if p == faults.ResolveAfterMetaOpen {
						return os.Mkdir(filepath.Join(root, testKey), 0o700)
					}
					return nil
				})
				t.Cleanup(func() { faults.Set(nil) })
			}
			type resolved struct {
				sess Session
				err  error
			}
			done := make(chan resolved, 1)
			jobDir := t.TempDir()
			fds := openFDs(t)
			aside, before := quarantine(func() {
				sess, err := s.Resolve(testKey, localJob(), jobDir)
				done <- resolved{sess, err}
			})
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			// The moved dir it let go of holds no descriptor.
			if n := openFDs(t); n != fds {
				t.Errorf("%d descriptors open after the quarantine and the resolve, %d before", n, fds)
			}
			if r.sess.Resume || r.sess.Reason != gates.Absent {
				t.Fatalf("the waiting resolve = {resume %v, %s, %d bytes}; want a cold start (absent), not %s's transcript", r.sess.Resume, r.sess.Reason, r.sess.Bytes, aside)
			}
			if b := staged(t, jobDir); len(b) != 0 {
				t.Fatalf("staged %d bytes of the quarantined key", len(b))
			}
			if after := treeState(t, filepath.Join(root, aside)); after != before {
				t.Fatalf("the quarantine dir changed under the resolve:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// dump waiting for a key's lock while a quarantine moved the key dir
// aside must not report the moved dir's record as the key's: the key is
// gone from its name, and dump says so as of a key removed during the
// walk.
func TestQuarantineDuringDumpReportsNoKeyDir(t *testing.T) {
	s, _, quarantine := quarantineWithAWaiter(t)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	done := make(chan KeyReport, 1)
	quarantine(func() {
		var got KeyReport
		err := s.InspectWith(context.Background(), InspectOptions{Only: testKey}, func(r KeyReport) error { got = r; return nil })
		if err != nil {
			t.Error(err)
		}
		done <- got
	})
	r := <-done
	if r.Verdict == nil || r.Verdict.Reason != string(gates.Absent) || r.RecordBytes != nil {
		t.Fatalf("dump of a key quarantined under it = problem %q, verdict %+v, record bytes %v; want no key dir, absent", r.Problem, r.Verdict, r.RecordBytes)
	}
}
