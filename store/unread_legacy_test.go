package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store/legacy"
)

// failLegacyRead fails the nth legacy sidecar read from now on (1: the
// first) with EIO, the others untouched, until the test ends.
func failLegacyRead(t *testing.T, nth int) (reads *int) {
	n := 0
	faults.Set(func(p faults.Point) error {
		if p != faults.LegacySidecarRead {
			return nil
		}
		if n++; n == nth {
			return syscall.EIO
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	return &n
}

// A legacy stamp whose file is there but cannot be read (EIO) is read as
// the legacy reader read it (legacy 48: venue-changed, never local;
// pi-version-changed), but the key could not be read: the cold start's
// ticket has no base, so the job's cold run is superseded by the
// conversation the key holds instead of replacing it. Before, the ticket
// carried the key's transcript as its base, and the job's promote replaced
// a conversation that was whole.
func TestALegacyStampNotReadGivesTheColdStartNoBase(t *testing.T) {
	for _, c := range []struct {
		name   string
		nth    int
		reason gates.Reason
	}{
		{"venue", 1, gates.VenueChanged},
		{"pi-version", 2, gates.PiVersionChanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			body := transcriptBytes(clock.now, "legacy turn")
			writeLegacy(t, root, testKey, map[string]string{
				TranscriptName: string(body),
				"pi-version":   testPi, "venue": "local",
			})
			failLegacyRead(t, c.nth)
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			faults.Set(nil)
			want(t, sess, false, c.reason)
			if sess.Base != (Base{}) {
				t.Fatalf("the cold start's base = %+v; want none", sess.Base)
			}
			stage(t, jobDir, append(transcriptBytes(clock.now), entryLine("a cold run")...))
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if res.Promoted || res.Reason != gates.Superseded {
				t.Fatalf("the job's promote = %+v; want superseded", res)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, body) {
				t.Fatalf("the key holds %q; want the legacy transcript", got)
			}
			sess, _ = mustResolve(t, s, testKey, localJob())
			want(t, sess, true, gates.Resumed)
		})
	}
}

// A legacy stamp read, but whose file has no value by its shape (here
// empty: the legacy writer's unknown pi), is the legacy verdict with the
// key's base, as before: the job's cold run is the key's next
// conversation.
func TestALegacyStampWithNoValueKeepsTheBase(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   "", "venue": "local",
	})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.PiVersionChanged)
	if sess.Base == (Base{}) {
		t.Fatal("the cold start has no base")
	}
	stage(t, jobDir, append(transcriptBytes(clock.now), entryLine("a cold run")...))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("the job's promote = %+v; want promoted", res)
	}
}

// The venue re-check after the copy, whose read fails on the file (EIO),
// is a fault: the stamp was read at the gate, and the failure says nothing
// of a promotion landing in between. It was venue-changed, on the key's
// base.
func TestLegacyVenueRecheckNotReadIsAFault(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   testPi, "venue": "local",
	})
	reads := failLegacyRead(t, 5) // venue, pi-version, chain, context; then the re-check
	sess, err := s.Resolve(testKey, localJob(), t.TempDir())
	if *reads != 5 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("resolve with the re-check failing (%d reads) = {resume %v, %s}, %v; want its EIO", *reads, sess.Resume, sess.Reason, err)
	}
}

// loggedLegacyKey is a store whose log is the returned buffer, with a
// legacy key stamped local and testPi.
func loggedLegacyKey(t *testing.T) (*Store, *bytes.Buffer) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy turn")),
		"pi-version":   testPi, "venue": "local",
	})
	return s, log
}

// A cold start that drops its base for a stamp not read says so in the
// store's log: a warning `session_stamp_unread` with the key, the
// verdict's reason, the stamp's file (under the root, as check names it)
// and the read's error, the operator's only sign that a job's run will be
// superseded rather than promoted. The line named neither the file nor
// the error: which of the key's files to look at, and why, was left to
// guess.
func TestALegacyStampNotReadIsLogged(t *testing.T) {
	for _, c := range []struct {
		file   string
		nth    int
		reason gates.Reason
	}{
		{legacy.VenueName, 1, gates.VenueChanged},
		{legacy.PiVersionName, 2, gates.PiVersionChanged},
	} {
		t.Run(c.file, func(t *testing.T) {
			s, log := loggedLegacyKey(t)
			failLegacyRead(t, c.nth)
			sess, _ := mustResolve(t, s, testKey, localJob())
			want(t, sess, false, c.reason)
			var events []map[string]any
			for _, line := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
				var e map[string]any
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if e["message"] == "session_stamp_unread" {
					events = append(events, e)
				}
			}
			if len(events) != 1 {
				t.Fatalf("logged %v (all: %s); want one session_stamp_unread", events, log.Bytes())
			}
			e := events[0]
			msg, _ := e["error"].(string)
			delete(e, "error")
			w := map[string]any{"level": "warn", "key": testKey, "reason": string(c.reason), "file": testKey + "/" + c.file, "message": "session_stamp_unread"}
			if !reflect.DeepEqual(e, w) || !strings.HasSuffix(msg, "/"+testKey+"/"+c.file+": "+syscall.EIO.Error()) {
				t.Fatalf("logged %v with error %q (all: %s); want %v with the read's error, naming the file", e, msg, log.Bytes(), w)
			}
		})
	}
}

// A stamp not read drops the cold start's base only where it decided the
// verdict. A job that declares no venue (or no pi version) cold-starts at
// that rung whatever the stamp holds: read or not, the verdict and its
// base are the same, so the key's base is kept and the job's cold run is
// the key's next conversation, as with the stamp read; nothing is logged.
// The base was dropped, and the job's run superseded, for a read that
// changed nothing.
func TestALegacyStampNotReadThatDecidedNothingKeepsTheBase(t *testing.T) {
	noVenue, noPi := localJob(), localJob()
	noVenue.Venue, noPi.PiVersion = "", ""
	for _, c := range []struct {
		name   string
		nth    int
		job    Job
		reason gates.Reason
	}{
		{"venue", 1, noVenue, gates.VenueChanged},
		{"pi-version", 2, noPi, gates.PiVersionChanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, log := loggedLegacyKey(t)
			read, _ := mustResolve(t, s, testKey, c.job)
			want(t, read, false, c.reason)
			failLegacyRead(t, c.nth)
			sess, jobDir := mustResolve(t, s, testKey, c.job)
			faults.Set(nil)
			want(t, sess, false, c.reason)
			if read.Base.File == nil || !read.Base.same(sess.Base) {
				t.Fatalf("the cold start's base with the %s not read = %+v; want the key's, as with it read: %+v", c.name, sess.Base, read.Base)
			}
			if bytes.Contains(log.Bytes(), []byte("session_stamp_unread")) {
				t.Fatalf("logged %s; want no session_stamp_unread", log.Bytes())
			}
			stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("a cold run")...))
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
				t.Fatalf("the job's promote = %+v; want promoted", res)
			}
		})
	}
}
