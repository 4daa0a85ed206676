package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
)

// A key made anew after it was reaped, quarantined, or had its meta.db
// moved aside starts its generations again at 1: a stale ticket's base
// can name the very generation number the new record has. The base is
// the generation with its size and CRC32C, so the stale job is
// superseded, and the new work stays the key's. And a ticket that
// promoted, retried after its key was made anew, is no repeat of a
// promotion the key no longer holds.
func TestStaleTicketOnAKeyMadeAnew(t *testing.T) {
	const day = 24 * time.Hour
	moveAside := func(t *testing.T, root string) {
		t.Helper()
		kd := filepath.Join(root, testKey)
		if err := os.Rename(filepath.Join(kd, "meta.db"), filepath.Join(kd, AsidePrefix+"20261101T120000Z")); err != nil {
			t.Fatal(err)
		}
	}
	// Each reset returns whether it made the key anew itself (at gen 1)
	// or left it for a cold job's first promotion to make.
	resets := map[string]func(t *testing.T, s *Store, root string, clock *testClock) bool{
		"reaped": func(t *testing.T, s *Store, root string, clock *testClock) bool {
			clock.now = clock.now.Add(15 * day)
			if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
				t.Fatalf("reap: %+v, %v", res, err)
			}
			return false
		},
		"quarantined": func(t *testing.T, s *Store, root string, clock *testClock) bool {
			if _, err := s.Quarantine(testKey); err != nil {
				t.Fatal(err)
			}
			return false
		},
		"meta.db moved aside": func(t *testing.T, s *Store, root string, clock *testClock) bool {
			moveAside(t, root)
			return false
		},
		"meta.db moved aside, then accepted": func(t *testing.T, s *Store, root string, clock *testClock) bool {
			moveAside(t, root)
			if res, err := s.Accept(testKey); err != nil || !res.Fresh || res.Gen != 1 {
				t.Fatalf("accept: %+v, %v", res, err)
			}
			return true
		},
	}
	for name, reset := range resets {
		t.Run(name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * day})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
			stale, staleDir, staleData := contractJob(t, s, testKey, "job-stale")
			stage(t, staleDir, answeredTurn(staleData, "stale", 100))
			if stale.Base.Gen != 1 {
				t.Fatalf("the stale ticket's base is gen %d, want 1", stale.Base.Gen)
			}
			// The ticket that promoted gen 2, to be retried after the reset.
			retried, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "newer")
			if !reset(t, s, root, clock) {
				// The key made anew by a cold job: gen 1 again.
				sess, dir, data := contractJob(t, s, testKey, "job-anew")
				if sess.Resume {
					t.Fatalf("after the reset the key resumed: %+v", sess)
				}
				stage(t, dir, answeredTurn(data, "anew", 100))
				if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
					t.Fatalf("the first promotion of the key made anew: %+v, want gen 1", res)
				}
			}
			anew := readCanonical(t, root, testKey)

			res := mustPromote(t, s, stale, PromoteRequest{PiVersion: testPi})
			if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
				t.Fatalf("the stale ticket on the key made anew: %+v, want superseded by gen 1", res)
			}
			res = mustPromote(t, s, retried, PromoteRequest{PiVersion: testPi})
			if res.Promoted || res.Reason != gates.Superseded {
				t.Fatalf("a retry of a promotion the key no longer holds: %+v, want superseded", res)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, anew) {
				t.Fatal("a stale ticket changed the key made anew")
			}
			if sc := sidecarsOf(t, root, testKey); sc.Transcript.Gen != 1 {
				t.Fatalf("the key made anew is at gen %d, want 1", sc.Transcript.Gen)
			}
		})
	}
}

// A key made anew that holds just what a ticket was resolved from takes
// its promotion: the same transcript accepted as gen 1 after its meta.db
// was moved aside, or nothing, for a ticket resolved on an absent key
// whose first promotion was then quarantined.
func TestTicketOnAKeyMadeAnewAsItWas(t *testing.T) {
	t.Run("accepted", func(t *testing.T) {
		s, root, _ := newTestStore(t, gates.Bounds{})
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
		sess, dir, data := contractJob(t, s, testKey, "job")
		kd := filepath.Join(root, testKey)
		if err := os.Rename(filepath.Join(kd, "meta.db"), filepath.Join(kd, AsidePrefix+"20261101T120000Z")); err != nil {
			t.Fatal(err)
		}
		if res, err := s.Accept(testKey); err != nil || !res.Fresh || res.Gen != 1 {
			t.Fatalf("accept: %+v, %v", res, err)
		}
		stage(t, dir, answeredTurn(data, "job", 100))
		if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
			t.Fatalf("a ticket on the transcript accepted as it was: %+v, want gen 2", res)
		}
	})
	t.Run("cold, then quarantined", func(t *testing.T) {
		s, root, _ := newTestStore(t, gates.Bounds{})
		cold, dir, data := contractJob(t, s, testKey, "cold")
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
		if _, err := s.Quarantine(testKey); err != nil {
			t.Fatal(err)
		}
		stage(t, dir, answeredTurn(data, "cold", 100))
		if res := mustPromote(t, s, cold, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
			t.Fatalf("a cold ticket on a key quarantined since: %+v, want gen 1", res)
		}
		if got := readCanonical(t, root, testKey); !bytes.Contains(got, []byte("answer cold")) {
			t.Fatal("the cold job's transcript is not the key's")
		}
	})
}
