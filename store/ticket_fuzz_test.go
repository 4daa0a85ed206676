package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

// ticketRootMark stands for the sessions root in the promote fuzz's seeds,
// which must not depend on where a run's temp dir is.
const ticketRootMark = "@ROOT@"

// ticketSeeds are tickets as every sessdb wrote them (a resolve's of this
// one, warm and cold, on a root and a fleet; those from before the job
// contract), and their near misses.
func ticketSeeds() [][]byte {
	id := strings.Repeat("0123456789abcdef", 2)
	warm := fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":true,"reason":"resumed","bytes":412,"crc32c":"0a1b2c3d","base":{"gen":3,"size":412,"crc32c":"0a1b2c3d"},"venue":"local","model":"anthropic/claude-sonnet-4-5","job":"job-7","job_dir":"/run/jobs/7"}`+"\n", id, ticketRootMark, testKey)
	return [][]byte{
		[]byte(warm),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":false,"reason":"absent","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"/run/jobs/8"}`+"\n", id, ticketRootMark, testKey)),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":false,"reason":"pi-version-changed","bytes":0,"crc32c":"00000000","base":{"file":{"dev":64768,"ino":131,"size":900,"mtime_ns":1790000000000000000}},"venue":"ci","job_dir":"/j"}`+"\n", id, ticketRootMark, testKey)),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":"/srv/pi/transcripts","key":%q,"resume":true,"reason":"resumed","bytes":5,"crc32c":"ffffffff","base":{"gen":18446744073709551615,"size":5,"crc32c":"ffffffff","rev":9007199254740993},"venue":"","job_dir":""}`, id, testKey)),
		[]byte(fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":412,"gen":3,"venue":"local","model":"anthropic/claude-sonnet-4-5","job":"old-1","job_dir":"/run/jobs/old-1"}`+"\n", testKey)),
		[]byte(fmt.Sprintf(`{"key":%q,"resume":false,"reason":"locked","bytes":0,"venue":"local","job":"Y","job_dir":"/run/jobs/Y"}`, testKey)),
		[]byte(fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":412,"venue":"local","job_dir":"/x"}`, testKey)),
		[]byte(strings.Replace(warm, `"ticket"`, `"TICKET"`, 1)),
		[]byte(strings.Replace(warm, `"bytes":412`, `"bytes":412,"bytes":-1`, 1)),
		[]byte(strings.Replace(warm, `"crc32c":"0a1b2c3d"`, `"crc32c":null`, 1)),
		[]byte(strings.Replace(warm, `"reason":"resumed"`, `"reason":"absent"`, 1)),
		// A cold start's reason a newer sessdb may name; a promote's
		// outcome; no token's form.
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":false,"reason":"some-newer-rung2","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"/run/jobs/9"}`, id, ticketRootMark, testKey)),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":false,"reason":"promoted","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"/run/jobs/9"}`, id, ticketRootMark, testKey)),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":%q,"resume":false,"reason":"meta--unreadable\n","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"/run/jobs/9"}`, id, ticketRootMark, testKey)),
		[]byte(fmt.Sprintf(`{"ticket":%q,"root":%q,"key":"2dc0f8ddc6a9b84a405d1cd6233055a9","resume":false,"reason":"","bytes":0,"crc32c":"00000000","base":{},"venue":"","job_dir":"/run/jobs/8"}`, id, ticketRootMark)),
		[]byte(warm + warm),
		[]byte(`{"key":"` + testKey + `","gen":1,"root":null}`),
		nil, []byte("null"), []byte("{}"), []byte("[]"), make([]byte, 300),
	}
}

// ticketMessage is every message a refused ticket's error may carry after
// "read ticket <name>: not a valid ticket": a place or a rule, never a
// byte of the file (it may be a link's target, a secret).
var ticketMessage = regexp.MustCompile(`^( \((empty: 0 bytes|only white space in its [0-9]+ bytes?, no JSON|cut short: its [0-9]+ bytes? end inside its JSON|not JSON at offset [0-9]+ of its [0-9]+ bytes?|([a-z0-9_.]+|a field): a JSON [a-z]+( at offset [0-9]+)?, which it cannot hold|a JSON [a-z]+, not an object|a field a ticket does not have|[a-z0-9_.]+: named in another case at offset [0-9]+, which no resolve writes|[a-z0-9_.]+: named twice, again at offset [0-9]+|crc32c: want 8 hex digits|not a ticket's JSON|trailing data at offset [0-9]+)\)|: [a-z0-9 ,()'.]+)$`)

// namedAt is the offset a refusal of a field's name gives.
var namedAt = regexp.MustCompile(`: named (?:in another case|twice, again) at offset ([0-9]+)`)

// valueAt is the type and offset a refusal of a field's value gives, and
// valueFirst the bytes a value of each type begins with.
var (
	valueAt    = regexp.MustCompile(`: a JSON ([a-z]+) at offset ([0-9]+), which it cannot hold`)
	valueFirst = map[string]string{"string": `"`, "number": "-0123456789", "bool": "tf", "null": "n", "object": "{", "array": "["}
)

// FuzzReadTicket gives the ticket's decoder any bytes a worker could leave
// in session.ticket. A ticket it accepts is one a resolve could have
// written: it passes validate, writeTicket's bytes of it read back as the
// same ticket and are a fixed point (resolve's own bytes are exactly
// those), its fields agree with each other as a resolve's always do, and
// one from before the job contract has none of the contract's fields. A
// ticket it refuses is ErrBadTicket with a message that quotes none of it.
// The read itself is bounded by ReadSmallFile (256 KiB; the "oversized"
// case of TestReadTicketRefusesWhatResolveCannotHaveWritten).
func FuzzReadTicket(f *testing.F) {
	for _, b := range ticketSeeds() {
		f.Add(bytes.ReplaceAll(b, []byte(ticketRootMark), []byte("/var/lib/pi/sessions")))
	}
	const name = "/run/jobs/7/" + TicketName
	f.Fuzz(func(t *testing.T, b []byte) {
		sess, err := decodeTicket(name, b)
		if err != nil {
			prefix := "read ticket " + name + ": " + ErrBadTicket.Error()
			msg, ok := strings.CutPrefix(err.Error(), prefix)
			if !errors.Is(err, ErrBadTicket) || !ok || !ticketMessage.MatchString(msg) {
				t.Fatalf("refused as %q: not ErrBadTicket with a message of its own", err)
			}
			// An offset named is in the file, and the size its own.
			var at, size int
			if _, serr := fmt.Sscanf(msg, " (not JSON at offset %d of its %d", &at, &size); serr == nil && (at >= len(b) || size != len(b)) {
				t.Fatalf("refused as %q: offset %d of %d, in %d bytes", err, at, size, len(b))
			}
			// A value's offset is where a value of its type begins.
			if m := valueAt.FindStringSubmatch(msg); m != nil {
				if at, _ := strconv.Atoi(m[2]); at >= len(b) || !strings.Contains(valueFirst[m[1]], string(b[at])) {
					t.Fatalf("refused as %q: no %s begins at offset %s of %d bytes", err, m[1], m[2], len(b))
				}
			}
			// A name's offset is where its quote opens.
			if m := namedAt.FindStringSubmatch(msg); m != nil {
				if at, _ := strconv.Atoi(m[1]); at >= len(b) || b[at] != '"' {
					t.Fatalf("refused as %q: no name begins at offset %s of %d bytes", err, m[1], len(b))
				}
			}
			return
		}
		if err := sess.validate(); err != nil {
			t.Fatalf("accepted a ticket that fails validate: %v: %+v", err, sess)
		}
		if why := notResolves(sess); why != "" {
			t.Fatalf("accepted a ticket no resolve writes (%s): %+v", why, sess)
		}
		if sess.Ticket == "" {
			if sess.Root != "" || sess.CRC32C != 0 || !reflect.DeepEqual(sess.Base, Base{}) {
				t.Fatalf("accepted a ticket with no id and a contract field: %+v", sess)
			}
			if sess.oldGen != 0 && !sess.Resume {
				t.Fatalf("a cold ticket from before the job contract kept a gen: %+v", sess)
			}
			return
		}
		if sess.oldGen != 0 {
			t.Fatalf("a ticket with an id kept a gen: %+v", sess)
		}
		c, err := encodeTicket(sess)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeTicket(name, c)
		if err != nil {
			t.Fatalf("writeTicket's bytes of an accepted ticket are refused: %v\n%s", err, c)
		}
		if !reflect.DeepEqual(again, sess) {
			t.Fatalf("written and read back as\n%+v\nwant\n%+v", again, sess)
		}
		if c2, _ := encodeTicket(again); !bytes.Equal(c2, c) {
			t.Fatalf("writeTicket's bytes are no fixed point:\n%s\n%s", c, c2)
		}
	})
}

// reasonToken is a reason token's form, as the reasons table spells each.
var reasonToken = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// notResolves says why no resolve writes sess's verdict ("": one does):
// a resolve always gives a reason, resumes with the reason resumed and
// the bytes it delivered, and a cold start delivers none, its reason a
// cold start's or a token a newer sessdb may name.
func notResolves(sess Session) string {
	switch {
	case sess.Reason == "":
		return "no reason"
	case sess.Resume != (sess.Reason == gates.Resumed):
		return "resume and reason disagree"
	case !sess.Resume && (sess.Bytes != 0 || sess.CRC32C != 0):
		return "a cold start with bytes delivered"
	case sess.Resume && sess.Bytes == 0:
		return "a resume of no bytes"
	case !slices.Contains(gates.ColdReasons(), sess.Reason) && sess.Reason != gates.Resumed &&
		(slices.Contains(gates.Reasons(), sess.Reason) || len(sess.Reason) > gates.MaxTokenBytes || !reasonToken.MatchString(string(sess.Reason))):
		return "a reason no resolve gives"
	}
	return ""
}

// FuzzPromoteTicket gives a promotion any ticket, through ReadTicket and
// Promote as the CLI does, on a key at gen 1 whose job staged a run that
// continues it. A ticket ReadTicket refuses never reaches the store; one
// it accepts either promotes the staged run as gen 2, whole, or is
// refused (a reason, or an error such as ErrWrongRoot) with the key's
// transcript, record and stamps as they were and, at most, its refusal
// appended to the history. Each input starts from a copy of the same
// store, at the same path, so that "@ROOT@" in an input is its root.
func FuzzPromoteTicket(f *testing.F) {
	base := f.TempDir()
	tmpl, root, jobDir := filepath.Join(base, "template"), filepath.Join(base, "sessions"), filepath.Join(base, "job")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { return now }, LockTimeout: 5 * time.Second}
	s, err := New(root, opts)
	if err != nil {
		f.Fatal(err)
	}
	first := transcriptBytes(now, "a")
	if err := os.MkdirAll(filepath.Join(jobDir, StagedDirName), 0o700); err != nil {
		f.Fatal(err)
	}
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	if err != nil {
		f.Fatal(err)
	}
	stagedPath := filepath.Join(jobDir, StagedDirName, TranscriptName)
	if err := os.WriteFile(stagedPath, first, 0o600); err != nil {
		f.Fatal(err)
	}
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		f.Fatalf("the first promotion: %+v, %v", res, err)
	}
	if _, err := s.Resolve(testKey, localJob(), jobDir); err != nil {
		f.Fatal(err)
	}
	ticket, err := os.ReadFile(filepath.Join(jobDir, TicketName))
	if err != nil {
		f.Fatal(err)
	}
	run := append(bytes.Clone(first), entryLine("b")...)
	if err := os.WriteFile(stagedPath, run, 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.Rename(root, tmpl); err != nil {
		f.Fatal(err)
	}
	// report is every entry under the root as Inspect sees it, but for
	// its meta pages (a history entry moves them).
	report := func(t *testing.T) map[string]KeyReport {
		s, err := New(root, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := map[string]KeyReport{}
		if err := s.Inspect(100, func(k KeyReport) error {
			k.MetaPages = nil
			r[k.Name] = k
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	f.Add(bytes.ReplaceAll(ticket, []byte(root), []byte(ticketRootMark)))
	for _, b := range ticketSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(root, os.DirFS(tmpl)); err != nil {
			t.Fatal(err)
		}
		before := report(t)
		if err := os.WriteFile(filepath.Join(jobDir, TicketName), bytes.ReplaceAll(b, []byte(ticketRootMark), []byte(root)), 0o600); err != nil {
			t.Fatal(err)
		}
		sess, err := ReadTicket(jobDir)
		if err != nil {
			if !errors.Is(err, ErrBadTicket) {
				t.Fatalf("refused as %v, not ErrBadTicket", err)
			}
			return
		}
		s, err := New(root, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		after := report(t)
		// The ticket's key (the one the store holds, or another) changes
		// by a promotion of the run onto it, or by its refusal in its
		// history; every other entry not at all.
		k := sess.Key
		promoted := err == nil && res.Promoted
		if promoted {
			want := before[k].Gen + 1
			got, rerr := os.ReadFile(filepath.Join(root, k, TranscriptName))
			if res.Gen != want || after[k].Gen != want || rerr != nil || !bytes.Equal(got, run) {
				t.Fatalf("promoted %+v onto gen %d: the key holds gen %d, %v", res, before[k].Gen, after[k].Gen, rerr)
			}
			after[k], before[k] = KeyReport{}, KeyReport{}
		} else {
			if err == nil && (res.Reason == "" || res.Reason == gates.Promoted) {
				t.Fatalf("not promoted, with no reason: %+v", res)
			}
			r := after[k]
			if h := r.History; len(h) == len(before[k].History)+1 && h[len(h)-1].Outcome == string(res.Reason) {
				r.History = h[:len(h)-1]
				after[k] = r
			}
			// A key that had no dir may keep the empty one the refused
			// promotion made for its lock: removed, it could be a rival's
			// first promotion's, waiting for that lock; reap removes it
			// past the TTL. Nothing may be in it.
			if _, had := before[k]; !had && r.Layout == LayoutEmpty {
				if names, rerr := os.ReadDir(filepath.Join(root, k)); rerr != nil || len(names) != 0 {
					t.Fatalf("promote %+v, %v left %s holding %v, %v; want it empty", res, err, k, names, rerr)
				}
				delete(after, k)
			}
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("promote %+v, %v (promoted %v) changed the root from\n%+v\nto\n%+v", res, err, promoted, before, after)
		}
		if !(promoted && k == testKey) && !bytes.Equal(readCanonical(t, root, testKey), first) {
			t.Fatalf("promote %+v, %v: the store's key's transcript changed", res, err)
		}
	})
}
