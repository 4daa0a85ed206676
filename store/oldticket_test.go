package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

// A ticket written by a sessdb from before the job contract (no ticket id)
// promotes as it always did, with no base, root or prefix check (store
// doc, Session.Ticket): a job resolved before an upgrade is promoted by
// the binary after it. Those tickets were store.Session as it was then,
// {key, resume, reason, bytes, gen, venue, model, job, job_dir}, gen (the
// generation delivered) present on every warm one.
func TestTicketFromBeforeTheJobContractPromotes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	given, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	other := Key("github", "acme/widget", "pi/issue-9")
	for _, c := range []struct {
		name, key, ticket string
		staged            []byte
		gen, chain        uint64
	}{
		{"warm", testKey, fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":1,"venue":"local","model":"anthropic/claude-sonnet-4-5","job":"old-1","job_dir":"/run/jobs/old-1"}`, testKey, len(given)),
			answeredTurn(given, "old", 100), 2, 1},
		{"cold", other, fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old-2"}`, other),
			answeredTurn(transcriptBytes(s.opts.Now()), "new", 100), 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobDir := t.TempDir()
			stage(t, jobDir, c.staged)
			if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(c.ticket), 0o600); err != nil {
				t.Fatal(err)
			}
			sess, err := ReadTicket(jobDir)
			if err != nil {
				t.Fatalf("a ticket from before the job contract: %v", err)
			}
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted || res.Gen != c.gen {
				t.Fatalf("promote = %+v, want gen %d", res, c.gen)
			}
			if sc := sidecarsOf(t, root, c.key); *sc.ResumeChain != c.chain {
				t.Fatalf("chain %d, want %d", *sc.ResumeChain, c.chain)
			}
		})
	}
}

// Only a ticket from before the job contract promotes with no base, root
// or prefix check, and such a ticket never had a root, a checksum or a
// base: every ticket with those fields was written with an id. One whose
// id was removed (a tool that rewrote it, an edit) is not a ticket from
// before the contract and must not take that path, or a stale job's run
// replaces the newer work promoted since its resolve.
func TestTicketWithoutItsIdIsNotAnOldTicket(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	_, staleDir := mustResolve(t, s, testKey, localJob())
	stage(t, staleDir, append(staged(t, staleDir), entryLine("stale")...))
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "newer") // gen 2
	newer := readCanonical(t, root, testKey)

	b, err := os.ReadFile(filepath.Join(staleDir, TicketName))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "ticket")
	for _, drop := range []string{"", "root", "crc32c", "base"} {
		t.Run("without ticket "+drop, func(t *testing.T) {
			f := maps.Clone(fields)
			delete(f, drop)
			b, _ := json.Marshal(f)
			if err := os.WriteFile(filepath.Join(staleDir, TicketName), b, 0o600); err != nil {
				t.Fatal(err)
			}
			sess, err := ReadTicket(staleDir)
			if err == nil {
				res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
				t.Fatalf("a ticket with its id removed was read as one from before the job contract: promote = %+v, %v", res, err)
			}
			if !errors.Is(err, ErrBadTicket) {
				t.Fatalf("ReadTicket: %v, want ErrBadTicket", err)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, newer) {
				t.Fatal("the newer promotion was replaced")
			}
		})
	}
}

// The same through the Go API: a Session whose id a caller dropped (a
// worker that keeps its tickets in its own records, without that field)
// is one ReadTicket would refuse, and Promote refuses it too, as its doc
// says, before anything is written. Before, Promote took it for a ticket
// from before the job contract: a cold run resolved on one root was
// promoted into another (no root check), and a retry of a promotion was
// superseded by its own generation (no repeat).
func TestASessionWithoutItsIdIsNotAnOldTicket(t *testing.T) {
	a, rootA, _ := newTestStore(t, gates.Bounds{})
	b, rootB, _ := newTestStore(t, gates.Bounds{})
	cold, jobDir := mustResolve(t, a, testKey, localJob())
	stage(t, jobDir, transcriptBytes(a.opts.Now(), "cold run"))
	cold.Ticket = ""
	if res, err := b.Promote(cold, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrBadTicket) || res.Promoted {
		t.Errorf("a cold Session of another root with its id dropped: %+v, %v; want ErrBadTicket", res, err)
	}
	if _, err := os.Lstat(filepath.Join(rootB, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the other root's key: %v; want nothing written there", err)
	}

	// A resumed one, its root dropped too: its base and checksum are
	// still the job contract's.
	runJob(t, a, testKey, localJob(), PromoteRequest{}, "base")
	before := readCanonical(t, rootA, testKey)
	warm, jobDir := mustResolve(t, a, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("warm run")...))
	warm.Ticket, warm.Root = "", ""
	if res, err := a.Promote(warm, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrBadTicket) || res.Promoted {
		t.Errorf("a resumed Session with its id and root dropped: %+v, %v; want ErrBadTicket", res, err)
	}
	if got := readCanonical(t, rootA, testKey); !bytes.Equal(got, before) {
		t.Fatal("the key changed")
	}

	// A cold one onto a key with history (another venue), its root
	// dropped too: no checksum, but its base is still the job contract's.
	elsewhere := localJob()
	elsewhere.Venue = "elsewhere"
	cold, jobDir = mustResolve(t, a, testKey, elsewhere)
	if cold.Resume || cold.Base == (Base{}) {
		t.Fatalf("resolve from another venue: %s, base %+v; want a cold start with a base", cold.Reason, cold.Base)
	}
	stage(t, jobDir, transcriptBytes(a.opts.Now(), "cold run elsewhere"))
	cold.Ticket, cold.Root = "", ""
	if res, err := a.Promote(cold, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrBadTicket) || res.Promoted {
		t.Errorf("a cold Session with a base, its id and root dropped: %+v, %v; want ErrBadTicket", res, err)
	}
	if got := readCanonical(t, rootA, testKey); !bytes.Equal(got, before) {
		t.Fatal("the key changed")
	}

	// A resumed one with its base dropped as well, into another root: its
	// checksum alone is still the job contract's.
	warm, jobDir = mustResolve(t, a, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("warm run elsewhere")...))
	warm.Ticket, warm.Root, warm.Base = "", "", Base{}
	if res, err := b.Promote(warm, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrBadTicket) || res.Promoted {
		t.Errorf("a resumed Session with its id, root and base dropped, into another root: %+v, %v; want ErrBadTicket", res, err)
	}
	if _, err := os.Lstat(filepath.Join(rootB, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the other root's key: %v; want nothing written there", err)
	}
}

// Jobs in flight when a host is upgraded were resolved by the old binary
// and are promoted by the new one. Two of them resolved on the same key
// from the same generation: the first promotes; the second, stale, must not
// replace it (README: a promotion that reported promoted is never
// overwritten by a stale or retried job), nor may a retry of the first
// promote it again. The tickets are the bytes sessdb 8f9973c (2026-11-30,
// the last commit before the job contract) wrote, measured by running it:
// {"key":…,"resume":true,"reason":"resumed","bytes":684,"gen":1,"venue":
// "local","job":"u3","job_dir":…}, and {"key":…,"resume":false,"reason":
// "absent","bytes":0,"venue":"local",…} for a key with no transcript.
func TestStaleTicketFromBeforeTheJobContractIsSuperseded(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	given, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	oldJob := func(ticket string, staged []byte) Session {
		t.Helper()
		jobDir := t.TempDir()
		stage(t, jobDir, staged)
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := ReadTicket(jobDir)
		if err != nil {
			t.Fatalf("a ticket from before the job contract: %v", err)
		}
		return sess
	}
	warm := func(job string) string {
		return fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":1,"venue":"local","job":%q,"job_dir":"/run/jobs/%s"}`, testKey, len(given), job, job)
	}
	first := oldJob(warm("u2"), answeredTurn(given, "first", 100))
	second := oldJob(warm("u3"), answeredTurn(given, "second job", 100))
	if res := mustPromote(t, s, first, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
		t.Fatalf("first = %+v, want promoted gen 2", res)
	}
	want, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	for name, sess := range map[string]Session{"the stale job": second, "a retry of the first": first} {
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
			t.Errorf("%s: %+v, want superseded by 2", name, res)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, testKey, TranscriptName)); !bytes.Equal(got, want) {
		t.Fatalf("the first job's acknowledged promotion was replaced (%d bytes, want %d)", len(got), len(want))
	}
	if sc := sidecarsOf(t, root, testKey); sc.Transcript.Gen != 2 {
		t.Fatalf("gen %d, want 2", sc.Transcript.Gen)
	}

	// A cold start on a key with no transcript, promoted after another job
	// made one: the old binary replaced it with a new conversation.
	other := Key("github", "acme/widget", "pi/issue-9")
	cold := oldJob(fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old-2"}`, other),
		answeredTurn(transcriptBytes(s.opts.Now()), "cold", 100))
	runJob(t, s, other, localJob(), PromoteRequest{}, "made in between")
	if res := mustPromote(t, s, cold, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded {
		t.Fatalf("cold onto a key promoted since: %+v, want superseded", res)
	}
}

// A job resolved warm by the old binary from a legacy key (no meta.db, as
// every key is again after a rollback through migrate --to-legacy) has a
// ticket with no gen, only the bytes it delivered: the old resolve knew no
// generation (measured with sessdb 8f9973c: {"key":…,"resume":true,
// "reason":"resumed","bytes":679,"venue":"local","job":"A",…}). Two such
// jobs promoted by this binary: the second, stale, must not replace the
// first's promotion, nor a retry of the first promote it again.
func TestStaleLegacyTicketFromBeforeTheJobContractIsSuperseded(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	given := transcriptBytes(clock.now, "legacy")
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(given), "pi-version": testPi, "venue": "local"})
	oldJob := func(job string, staged []byte) Session {
		t.Helper()
		jobDir := t.TempDir()
		stage(t, jobDir, staged)
		ticket := fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"venue":"local","job":%q,"job_dir":"/run/jobs/%s"}`, testKey, len(given), job, job)
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := ReadTicket(jobDir)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	first := oldJob("A", answeredTurn(given, "first", 100))
	second := oldJob("B", answeredTurn(given, "second job", 100))
	if res := mustPromote(t, s, first, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
		t.Fatalf("first = %+v, want promoted gen 1", res)
	}
	want := readCanonical(t, root, testKey)
	for name, sess := range map[string]Session{"the stale job": second, "a retry of the first": first} {
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
			t.Errorf("%s: %+v, want superseded by 1", name, res)
		}
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, want) {
		t.Fatalf("the first job's acknowledged promotion was replaced (%d bytes, want %d)", len(got), len(want))
	}

	// Migrated in between: the key still holds what the job resumed.
	other := Key("github", "acme/widget", "pi/issue-9")
	writeLegacy(t, root, other, map[string]string{TranscriptName: string(given), "pi-version": testPi, "venue": "local"})
	sess := oldJob("C", answeredTurn(given, "third", 100))
	sess.Key = other
	// What migrate commits for it: a record of gen 1 for the file in place.
	kd, err := fsat.OpenDir(filepath.Join(root, other))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	venue, pi := "local", testPi
	err = d.Update(func(tx *db.Tx) error {
		return tx.PutSidecars(db.Sidecars{
			Transcript: &db.Transcript{Gen: 1, Size: int64(len(given)), CRC32C: uint64(crc32.Checksum(given, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: clock.now.UnixNano()},
			PiVersion:  &pi, Venue: &venue,
		})
	})
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("a legacy key migrated since the resolve: %+v, want promoted", res)
	}
}

// The old resolve said absent of a key whose transcript was missing or
// empty whatever its meta.db said (rung 1 comes before the record is
// read): a key whose transcript was removed or truncated out of band. No
// job has promoted since: the old ticket promotes, as the new binary's own
// ticket resolved there does (measured: 8f9973c resolve absent of a key
// of gen 1 whose transcript was cut to 0 bytes; this promote said
// superseded by 1).
func TestAbsentTicketFromBeforeTheJobContractOnAKeyThatLostItsTranscript(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	for name, lose := range map[string]func(string) error{
		"removed":   os.Remove,
		"truncated": func(p string) error { return os.Truncate(p, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			key := Key("github", "acme/lost", name)
			runJob(t, s, key, localJob(), PromoteRequest{}, "one")
			runJob(t, s, key, localJob(), PromoteRequest{}, "two")
			if err := lose(filepath.Join(root, key, TranscriptName)); err != nil {
				t.Fatal(err)
			}
			got, _ := mustResolve(t, s, key, localJob())
			want(t, got, false, gates.Absent)
			jobDir := t.TempDir()
			stage(t, jobDir, answeredTurn(transcriptBytes(clock.now), "fresh", 100))
			ticket := fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old"}`, key)
			if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
				t.Fatal(err)
			}
			sess, err := ReadTicket(jobDir)
			if err != nil {
				t.Fatal(err)
			}
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 3 {
				t.Fatalf("promote = %+v, want promoted gen 3 (nothing was promoted since the resolve)", res)
			}
		})
	}
}

// A job the old binary resolved cold as locked never read the key: another
// promotion held it, and may since have been acknowledged. Its run must
// not replace what the key holds, as this binary's own locked ticket does
// not (its base is none: superseded by whatever the key holds); onto a key
// that still holds nothing it promotes. Measured with sessdb 8f9973c:
// resolve while meta.db's flock was held, {"key":…,"resume":false,
// "reason":"locked","bytes":0,"venue":"local","job":"Y",…}; this promote
// of the job holding the lock (gen 2), then of Y: gen 3, the first
// conversation gone.
func TestLockedTicketFromBeforeTheJobContractReplacesNothing(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	oldLocked := func(key string) Session {
		t.Helper()
		jobDir := t.TempDir()
		stage(t, jobDir, answeredTurn(transcriptBytes(clock.now), "cold while locked", 100))
		ticket := fmt.Sprintf(`{"key":%q,"resume":false,"reason":"locked","bytes":0,"venue":"local","job":"Y","job_dir":"/run/jobs/Y"}`, key)
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := ReadTicket(jobDir)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	locked := oldLocked(testKey)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the promotion that held the lock")
	want := readCanonical(t, root, testKey)
	if res := mustPromote(t, s, locked, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
		t.Fatalf("a locked ticket onto a key that holds a conversation: %+v, want superseded by 1", res)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, want) {
		t.Fatal("the conversation the job never read was replaced")
	}

	other := Key("github", "acme/widget", "pi/issue-9")
	if res := mustPromote(t, s, oldLocked(other), PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
		t.Fatalf("a locked ticket onto a key that holds nothing: %+v, want promoted gen 1", res)
	}
}
