package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"

	bolt "go.etcd.io/bbolt"
)

// Tests of the generation a promotion takes and the base it is judged
// on, which a hand-mutant sweep (helper mutcore44) showed no test held.

// A promotion's generation grows from the highest the key remembers, its
// history included (lastGen): with its record lost, a key's next
// promotion is still above every generation its history names, never
// generation 1 again, which the db refuses as going back (the promotion
// failed).
func TestTheNextGenerationIsAboveEveryOneTheHistoryNames(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	for _, line := range []string{"one", "two", "three"} {
		runJob(t, s, testKey, localJob(), PromoteRequest{}, line)
	}
	// The record deleted, as a damaged page can lose it: the db's own
	// writes never do.
	b, err := bolt.Open(filepath.Join(root, testKey, db.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("sidecars")).Delete([]byte("transcript")) })
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	sess, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "four")
	if res.Gen != 4 {
		t.Fatalf("promoted gen %d (resolved %s); want gen 4, the history naming 1 to 3", res.Gen, sess.Reason)
	}
}

// A key reaped and made anew numbers its generations from 1 again, and
// its new gen 1 can have the very size of the old one: the base is the
// generation with its size and its CRC32C, so a stale job resumed on the
// old gen 1 is superseded, and the new conversation stays the key's.
func TestAStaleTicketOnAKeyMadeAnewAtTheSameGenerationAndSizeIsSuperseded(t *testing.T) {
	const day = 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * day})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base-A")
	stale, staleDir := mustResolve(t, s, testKey, localJob())
	want(t, stale, true, gates.Resumed)
	stage(t, staleDir, append(staged(t, staleDir), entryLine("stale")...))

	clock.now = clock.now.Add(15 * day)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	_, anew := runJob(t, s, testKey, localJob(), PromoteRequest{}, "base-B")
	held := readCanonical(t, root, testKey)
	if anew.Gen != stale.Base.Gen || int64(len(held)) != stale.Base.Size {
		t.Fatalf("the key made anew holds gen %d of %d bytes; the test wants the stale base's gen %d and size %d", anew.Gen, len(held), stale.Base.Gen, stale.Base.Size)
	}

	res := mustPromote(t, s, stale, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
		t.Fatalf("the stale ticket on the key made anew: %+v, want superseded by gen 1", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, held) {
		t.Fatal("a stale ticket replaced the key made anew")
	}
}

// A committed promotion's temp that changes between the resolve's read of
// it and its copy (a process that ignores the lock) sends the resolve back
// to the transcript in place, the generation before: the staged file is
// then that copy alone, emptied of the first, and the ticket's bytes are
// its bytes.
func TestATempChangedUnderTheCopyStagesOnlyTheGenerationInPlace(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	tmp := commitWithoutRename(t, s, root)
	before := readCanonical(t, root, testKey)
	fired := insideAt(t, faults.ResolveAfterGates, func() error {
		b, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		b[len(b)-3] ^= 0xff
		return os.WriteFile(tmp, b, 0o600)
	})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	if !*fired {
		t.Fatal("the resolve never reached its fault point")
	}
	want(t, sess, true, gates.Resumed)
	if got := staged(t, jobDir); !bytes.Equal(got, before) || sess.Gen() != 1 {
		t.Fatalf("staged %d bytes at gen %d; want the %d bytes of gen 1 in place, alone", len(got), sess.Gen(), len(before))
	}
}

// A promotion made with no ticket (a job resolved by a sessdb from before
// the job contract) names no base it was checked against, and tells
// nothing of whether the key was back below an earlier promotion: a
// retry of a ticket that promoted before it still repeats its result.
// Here the old job resumed that very promotion, which its own holds.
func TestARetryAfterATicketlessPromotionRepeats(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	first, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "two") // gen 2
	two := readCanonical(t, root, testKey)

	oldDir := t.TempDir()
	stage(t, oldDir, append(append([]byte{}, two...), entryLine("three, by an old job")...))
	ticket := fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":2,"venue":"local","job_dir":"/run/jobs/old"}`, testKey, len(two))
	if err := os.WriteFile(filepath.Join(oldDir, TicketName), []byte(ticket), 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := ReadTicket(oldDir)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustPromote(t, s, old, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 3 {
		t.Fatalf("the old ticket's promotion = %+v, want gen 3", res)
	}

	// The retry of gen 2's promotion: its run is still in its job dir.
	stage(t, first.JobDir, two)
	res := mustPromote(t, s, first, PromoteRequest{PiVersion: testPi})
	if !res.Promoted || !res.Repeat || res.Gen != 2 {
		t.Fatalf("a retry of gen 2's promotion after a ticketless one = %+v; want its repeat, gen 2", res)
	}
}

// A transcript whose last copy chunk is its final newline alone (one byte
// past a 32 KiB buffer) is staged as it is: the torn-tail check looks at
// the last byte copied, however short the write that carried it.
func TestATranscriptEndingOneBytePastACopyChunkIsStagedAsItIs(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	head := transcriptBytes(clock.now)
	pad := 32<<10 + 1 - len(head) - len(entryLine(""))
	runJob(t, s, testKey, localJob(), PromoteRequest{}, strings.Repeat("x", pad))
	held := readCanonical(t, root, testKey)
	if len(held) != 32<<10+1 || held[len(held)-1] != '\n' || held[len(held)-2] == '\n' {
		t.Fatalf("the key holds %d bytes; the test wants 32 KiB and one, the last its only newline there", len(held))
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if got := staged(t, jobDir); !bytes.Equal(got, held) {
		t.Fatalf("staged %d bytes (last %q); want the key's %d as they are", len(got), got[len(got)-2:], len(held))
	}
}

// A warm ticket from before the job contract carries the generation and
// the bytes it delivered, and holds only while the key holds both: a key
// reaped and made anew is at gen 1 again, with other bytes, and the old
// job resumed on the first gen 1 is superseded by it.
func TestAnOldTicketOnAKeyMadeAnewAtItsGenerationIsSuperseded(t *testing.T) {
	const day = 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * day})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	given := readCanonical(t, root, testKey)
	oldDir := t.TempDir()
	stage(t, oldDir, append(append([]byte{}, given...), entryLine("stale, by an old job")...))
	ticket := fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":1,"venue":"local","job_dir":"/run/jobs/old"}`, testKey, len(given))
	if err := os.WriteFile(filepath.Join(oldDir, TicketName), []byte(ticket), 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := ReadTicket(oldDir)
	if err != nil {
		t.Fatal(err)
	}

	clock.now = clock.now.Add(15 * day)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	_, anew := runJob(t, s, testKey, localJob(), PromoteRequest{}, "made anew, longer")
	held := readCanonical(t, root, testKey)
	if anew.Gen != 1 || len(held) == len(given) {
		t.Fatalf("the key made anew holds gen %d of %d bytes; the test wants gen 1 of another size than %d", anew.Gen, len(held), len(given))
	}
	res := mustPromote(t, s, old, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded {
		t.Fatalf("the old ticket on the key made anew: %+v, want superseded", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, held) {
		t.Fatal("an old ticket replaced the key made anew")
	}
}
