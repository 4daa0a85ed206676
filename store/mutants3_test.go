package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// Tests a mutation sweep of the single-host protocol code showed missing
// (notes of helper mutants3): each holds a promise no other store test
// held the code to.

// unavailableBackend is a backend none of whose keys can be read: each
// view observes store-unavailable (as a fleet's does with etcd silent),
// while the key, read through the backend beneath, holds a transcript.
type unavailableBackend struct{ Backend }

func (b unavailableBackend) View(key string, bo gates.Bounds) (KeyView, error) {
	v, err := b.Backend.View(key, bo)
	if err != nil {
		return nil, err
	}
	return unavailableView{v}, nil
}

type unavailableView struct{ KeyView }

func (v unavailableView) Observe() (gates.Observation, gates.Reason) {
	obs, _ := v.KeyView.Observe()
	return obs, gates.StoreUnavailable
}

// A resolve that could read nothing of the key (store-unavailable) hands
// out no base, whatever the view's Base says: the key may hold a
// conversation whole, and the job's cold run must never replace it. Its
// promote is superseded by what the key holds.
func TestStoreUnavailableResolveHasNoBase(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	_, first := runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	held := readCanonical(t, root, testKey)

	blind := NewOn(unavailableBackend{s.backend}, s.opts)
	sess, jobDir := mustResolve(t, blind, testKey, localJob())
	want(t, sess, false, gates.StoreUnavailable)
	if sess.Base != (Base{}) {
		t.Fatalf("store-unavailable resolve has base %+v, want none", sess.Base)
	}
	stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("a cold run")...))
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != first.Gen {
		t.Fatalf("promote of a store-unavailable resolve = %+v, want superseded by gen %d", res, first.Gen)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, held) {
		t.Fatalf("the key's transcript was replaced by a cold run")
	}
}

// unreadableBackend is the key-dir backend with each view's source
// replaced by a file that fails every read (a directory: EISDIR), as a
// transcript on a failing disk does; the view's Lost is the key dir's.
type unreadableBackend struct {
	Backend
	t *testing.T
}

func (b unreadableBackend) View(key string, bo gates.Bounds) (KeyView, error) {
	v, err := b.Backend.View(key, bo)
	if err != nil {
		return nil, err
	}
	d, err := os.Open(b.t.TempDir())
	if err != nil {
		v.Close()
		return nil, err
	}
	b.t.Cleanup(func() { d.Close() })
	return unreadableView{v, d}, nil
}

type unreadableView struct {
	KeyView
	dir *os.File
}

func (v unreadableView) Source() (*os.File, int64) {
	_, limit := v.KeyView.Source()
	return v.dir, limit
}

// On a key dir a read error of the key's transcript is a fault (the key
// dir's Lost judges none): the resolve fails with it, leaves no ticket
// and no staged file, and is never a cold start with no reason.
func TestResolveFailsOnAnUnreadableTranscript(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")

	failing := NewOn(unreadableBackend{s.backend, t}, s.opts)
	jobDir := t.TempDir()
	sess, err := failing.Resolve(testKey, localJob(), jobDir)
	if !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("resolve of an unreadable transcript = {resume %v, reason %q}, %v; want the read's error (EISDIR)", sess.Resume, sess.Reason, err)
	}
	for _, name := range []string{TicketName, filepath.Join(StagedDirName, TranscriptName)} {
		if _, err := os.Lstat(filepath.Join(jobDir, name)); !os.IsNotExist(err) {
			t.Errorf("a failed resolve left %s: %v", name, err)
		}
	}
}

// sameRun is the rule a ticket's repeat goes by: the staged file is the
// transcript the ticket's promotion e made only if its size (a torn
// tail's added newline counted) is e's, always, and its checksum is the
// one e recorded, or, for an entry from before entries recorded one, the
// record's while the record still describes e's generation. A job that
// ran pi again after its promote must not be told its new work is the
// key's.
func TestSameRunComparesTheSizeAlways(t *testing.T) {
	const sum = 0x1234
	withCRC := db.HistoryEntry{Gen: 3, Bytes: 100, CRC32C: sum}
	noCRC := db.HistoryEntry{Gen: 3, Bytes: 100}
	recOf := func(gen uint64, crc uint64) db.Sidecars {
		return db.Sidecars{Transcript: &db.Transcript{Gen: gen, Size: 100, CRC32C: crc}}
	}
	for _, c := range []struct {
		name   string
		e      db.HistoryEntry
		rec    db.Sidecars
		staged stagedFile
		sum    uint32
		want   bool
	}{
		{"same size and checksum", withCRC, recOf(3, sum), stagedFile{size: 100}, sum, true},
		{"a torn tail's newline counted", withCRC, recOf(3, sum), stagedFile{size: 99, torn: true}, sum, true},
		{"same checksum, another size", withCRC, recOf(3, sum), stagedFile{size: 101}, sum, false},
		{"same size, another checksum", withCRC, recOf(3, sum), stagedFile{size: 100}, sum + 1, false},
		{"same size, another checksum, the record moved on", withCRC, recOf(4, sum+7), stagedFile{size: 100}, sum + 1, false},
		{"no checksum in e: the record's, same", noCRC, recOf(3, sum), stagedFile{size: 100}, sum, true},
		{"no checksum in e: the record's, another", noCRC, recOf(3, sum), stagedFile{size: 100}, sum + 1, false},
		{"no checksum in e, the record moved on: same size", noCRC, recOf(4, sum+7), stagedFile{size: 100}, sum + 1, true},
		{"no checksum in e, the record moved on: another size", noCRC, recOf(4, sum+7), stagedFile{size: 101}, sum + 1, false},
		{"no checksum in e, no record: another size", noCRC, db.Sidecars{}, stagedFile{size: 101}, sum, false},
	} {
		if got := sameRun(c.e, c.rec, c.staged, stagedContent{sum: c.sum}); got != c.want {
			t.Errorf("%s: sameRun = %v, want %v", c.name, got, c.want)
		}
	}
}

// A ticket resolve wrote, with a field no sessdb writes or a second value
// after it, is refused as a bad ticket: TestReadTicketRefusesWhatResolve-
// CannotHaveWritten's cases of those are refused for another reason too
// (no reason, no verdict), so they held neither check.
func TestReadTicketRefusesAnAddedFieldOrValue(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, jobDir := mustResolve(t, s, testKey, localJob())
	p := filepath.Join(jobDir, TicketName)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); err != nil {
		t.Fatalf("the ticket as written: %v", err)
	}
	for name, b := range map[string][]byte{
		"a field no sessdb writes": append([]byte(`{"promoted":true,`), orig[1:]...),
		"a second value after it":  append(append([]byte{}, orig...), []byte(`{"resume":true}`)...),
	} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
			t.Errorf("%s: ReadTicket = %v, want ErrBadTicket", name, err)
		}
	}
}

// A warm ticket from before the job contract carries the generation and
// the bytes it delivered; the key still holds its base only when both are
// the key's. A promotion since of a transcript of the same size (an
// allowed rewrite, an edit) is still another generation, and the stale
// job is superseded by it.
func TestOldTicketIsSupersededByAGenerationOfTheSameSize(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	given, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	oldJob := func(job string, staged []byte) Session {
		t.Helper()
		jobDir := t.TempDir()
		stage(t, jobDir, staged)
		ticket := fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":1,"venue":"local","job":%q,"job_dir":"/run/jobs/%s"}`, testKey, len(given), job, job)
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := ReadTicket(jobDir)
		if err != nil {
			t.Fatalf("a ticket from before the job contract: %v", err)
		}
		return sess
	}
	i := bytes.LastIndex(given, []byte("base"))
	if i < 0 {
		t.Fatal("no line to edit")
	}
	edited := append(append(append([]byte{}, given[:i]...), "BASE"...), given[i+4:]...)
	first := oldJob("u2", edited)
	second := oldJob("u3", answeredTurn(given, "second job", 100))
	if res := mustPromote(t, s, first, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 || res.Bytes != int64(len(given)) {
		t.Fatalf("first = %+v, want promoted gen 2 of %d bytes", res, len(given))
	}
	held := readCanonical(t, root, testKey)
	if res := mustPromote(t, s, second, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Fatalf("the stale job onto gen 2 of the delivered size: %+v, want superseded by 2", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, held) {
		t.Fatal("the first job's promotion was replaced")
	}
}

// A record of exactly the max-bytes bound is no more too-large to
// VerifyRecorded than to a resolve (gates: over the bound, strictly): it
// is read and verified.
func TestVerifyRecordedReadsARecordAtTheBound(t *testing.T) {
	data := []byte("a transcript of exactly the bound\n")
	n := int64(len(data))
	sum := uint64(crc32.Checksum(data, castagnoli))
	r, err := VerifyRecorded(context.Background(), bytes.NewReader(data), n, n, sum, n)
	if err != nil || r.Result != VerifyOK || r.Bytes != n {
		t.Fatalf("a %d-byte record under a %d-byte bound: %+v, %v; want %s, read whole", n, n, r, err, VerifyOK)
	}
}

// Reap goes by the expired rung's own test, strictly older than the TTL:
// a key promoted exactly the TTL ago still resumes, and reap keeps it.
func TestReapKeepsAKeyOfExactlyTheTTL(t *testing.T) {
	const ttl = time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	clock.now = clock.now.Add(ttl)
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != 0 || res.Kept != 1 {
		t.Fatalf("reap at exactly the TTL: %+v, %v; want the key kept", res, err)
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if _, err := os.Stat(filepath.Join(root, testKey, TranscriptName)); err != nil {
		t.Fatal(err)
	}
}

// What promote judged in its one read of the staged file (the prefix, the
// run's shape, the checksum) is what it promotes: a staged file whose
// bytes change in place, within its size, between that read and the copy
// into the key dir fails the promotion, and the key keeps what it held.
func TestStagedFileChangedInPlaceDuringPromoteFails(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	held := readCanonical(t, root, testKey)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	data := append(staged(t, jobDir), entryLine("the run's turn")...)
	stage(t, jobDir, data)
	p := filepath.Join(jobDir, StagedDirName, TranscriptName)
	defer faults.Set(nil)
	faults.Set(func(pt faults.Point) error {
		if pt == faults.DBOpenWriter {
			faults.Set(nil)
			// The same inode, the same size: only the bytes differ.
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return nil
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("X"), int64(len(data))-3); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err == nil || res.Promoted {
		t.Fatalf("promote of a staged file changed after its read: %+v, %v; want promote-failed", res, err)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, held) {
		t.Fatal("the key's transcript changed")
	}
}

// A ticket with a negative size or revision anywhere is refused, each
// alone: no resolve writes one.
func TestReadTicketRefusesEachNegativeSize(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the conversation")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	for name, edit := range map[string]func(*Session){
		"bytes":     func(s *Session) { s.Bytes = -1 },
		"base size": func(s *Session) { s.Base.Size = -1 },
		"base rev":  func(s *Session) { s.Base.Rev = -1 },
	} {
		bad := sess
		edit(&bad)
		b, err := encodeTicket(bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
			t.Errorf("a negative %s: ReadTicket = %v, want ErrBadTicket", name, err)
		}
	}
}
