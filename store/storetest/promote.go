package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sessdb/internal/pientry"
	"sync"
	"syscall"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/transcript"
)

// unchanged fails the promise if key's record or history changed since
// before was read.
func (e *env) unchanged(key string, before db.Sidecars, beforeH []db.HistoryEntry, what string) {
	e.t.Helper()
	sc, h := e.record(key)
	if !reflect.DeepEqual(sc, before) || !reflect.DeepEqual(h, beforeH) {
		e.fatalf("%s changed the key:\nrecord %+v -> %+v\nhistory %d -> %d entries", what, before, sc, len(beforeH), len(h))
	}
}

// Every outcome of a promotion, and the job contract: one ticket, one
// promotion, onto its base.
var promotePromises = []promise{
	{"promote/promoted: each generation onto the one before", func(e *env) {
		for i := uint64(1); i <= 3; i++ {
			sess, jobDir, data := e.job(key, fmt.Sprint("job-", i))
			data = turn(data, fmt.Sprint(i), 100)
			e.stage(jobDir, data)
			res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
			if !res.Promoted || res.Gen != i || res.Bytes != int64(len(data)) || res.Run != transcript.Answered || res.Repeat {
				e.fatalf("job %d: %+v", i, res)
			}
		}
	}},
	{"promote/absent: no staged file, or an empty one", func(e *env) {
		e.run(key, "base")
		before, beforeH := e.record(key)
		for name, prepare := range map[string]func(jobDir string){
			"missing": func(jobDir string) { os.Remove(stagedPath(jobDir)) },
			"empty":   func(jobDir string) { e.stage(jobDir, nil) },
			"no dir":  func(jobDir string) { os.RemoveAll(filepath.Dir(stagedPath(jobDir))) },
		} {
			sess, jobDir := e.resolve(key, localJob())
			prepare(jobDir)
			if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); res.Promoted || res.Reason != gates.Absent {
				e.fatalf("%s staged file: %+v, want absent", name, res)
			}
		}
		e.unchanged(key, before, beforeH, "a promote of nothing")
	}},
	{"promote/not-a-regular-file: a staged link, FIFO, directory or hard link", func(e *env) {
		e.run(key, "base")
		before, beforeH := e.record(key)
		outside := filepath.Join(e.t.TempDir(), "outside.jsonl")
		if err := os.WriteFile(outside, turn(header(start), "outside", 10), 0o600); err != nil {
			e.t.Fatal(err)
		}
		for name, prepare := range map[string]func(p string) error{
			"symlink":   func(p string) error { return os.Symlink(outside, p) },
			"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
			"directory": func(p string) error { return os.Mkdir(p, 0o700) },
			"hard link": func(p string) error { return os.Link(outside, p) },
		} {
			sess, jobDir := e.resolve(key, localJob())
			p := stagedPath(jobDir)
			os.Remove(p)
			if err := prepare(p); err != nil {
				e.t.Fatal(err)
			}
			if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); res.Promoted || res.Reason != gates.NotARegularFile {
				e.fatalf("staged %s: %+v, want not-a-regular-file", name, res)
			}
		}
		e.unchanged(key, before, beforeH, "a promote of a file that is no regular file")
	}},
	{"promote/too-large over the byte cap", func(e *env) {
		_, first := e.run(key, "base")
		before, beforeH := e.record(key)
		sess, jobDir := e.resolve(key, localJob())
		e.stage(jobDir, turn(e.staged(jobDir), "big", 10))
		s := e.with(gates.Bounds{MaxBytes: first.Bytes + 10})
		if res := e.promoteOn(s, sess, store.PromoteRequest{PiVersion: piVersion}); res.Promoted || res.Reason != gates.TooLarge {
			e.fatalf("promote = %+v, want too-large", res)
		}
		e.unchanged(key, before, beforeH, "a promote over the cap")
	}},
	{"promote/superseded: the second of two jobs on one base", func(e *env) {
		e.run(key, "base")
		b, dirB, dataB := e.job(key, "job-B")
		c, dirC, dataC := e.job(key, "job-C")
		e.stage(dirB, turn(dataB, "B", 100))
		e.stage(dirC, turn(dataC, "C", 100))
		if won := e.promote(b, store.PromoteRequest{PiVersion: piVersion}); !won.Promoted || won.Gen != 2 {
			e.fatalf("first promote = %+v", won)
		}
		before, beforeH := e.record(key)
		stagedC := e.staged(dirC)
		lost := e.promote(c, store.PromoteRequest{PiVersion: piVersion})
		if lost.Promoted || lost.Reason != gates.Superseded || lost.SupersededBy != 2 {
			e.fatalf("second promote = %+v, want superseded by gen 2", lost)
		}
		if !bytes.Equal(e.staged(dirC), stagedC) {
			e.fatalf("the superseded job's transcript left its job dir")
		}
		sc, h := e.record(key)
		if !reflect.DeepEqual(sc, before) || len(h) != len(beforeH)+1 {
			e.fatalf("a refusal changed the record, or recorded %d entries", len(h)-len(beforeH))
		}
		last := h[len(h)-1]
		if last.Outcome != string(gates.Superseded) || last.Job != "job-C" || last.Ticket != c.Ticket || last.Gen != 2 || last.BaseGen != 1 {
			e.fatalf("the refusal in the history = %+v", last)
		}
		sess, jobDir := e.resolve(key, localJob())
		if e.want(sess, true, gates.Resumed); lastText(e.staged(jobDir)) != "answer B" {
			e.fatalf("the key holds %q, want the winner's turn", lastText(e.staged(jobDir)))
		}
		again := e.promote(c, store.PromoteRequest{PiVersion: piVersion})
		if _, h2 := e.record(key); again.Reason != gates.Superseded || len(h2) != len(h) {
			e.fatalf("a retried refusal = %+v, history %d -> %d entries: recorded twice", again, len(h), len(h2))
		}
	}},
	{"promote/superseded: a cold ticket once the key has a transcript", func(e *env) {
		a, dirA, dataA := e.job(key, "A")
		b, dirB, dataB := e.job(key, "B")
		e.stage(dirA, turn(dataA, "A", 10))
		e.stage(dirB, turn(dataB, "B", 10))
		if res := e.promote(a, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted {
			e.fatalf("A: %+v", res)
		}
		if res := e.promote(b, store.PromoteRequest{PiVersion: piVersion}); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
			e.fatalf("B: %+v, want superseded by gen 1", res)
		}
	}},
	{"promote/superseded: of many jobs racing on one base exactly one promotes", func(e *env) {
		e.run(key, "base")
		const jobs = 6
		sess, data := make([]store.Session, jobs), make([][]byte, jobs)
		for i := range jobs {
			var dir string
			sess[i], dir, data[i] = e.job(key, fmt.Sprint("racer-", i))
			e.stage(dir, turn(data[i], fmt.Sprint("R", i), 10))
		}
		res, errs := make([]store.PromoteResult, jobs), make([]error, jobs)
		var wg sync.WaitGroup
		for i := range jobs {
			wg.Go(func() { res[i], errs[i] = e.s.Promote(sess[i], store.PromoteRequest{PiVersion: piVersion}) })
		}
		wg.Wait()
		winner := -1
		for i := range jobs {
			switch {
			case errs[i] != nil:
				e.fatalf("racer %d: %v", i, errs[i])
			case res[i].Promoted && winner >= 0:
				e.fatalf("racers %d and %d both promoted onto one base", winner, i)
			case res[i].Promoted:
				winner = i
			case res[i].Reason != gates.Superseded && res[i].Reason != gates.Locked:
				e.fatalf("racer %d: %+v, want superseded (or locked)", i, res[i])
			}
		}
		if winner < 0 {
			e.fatalf("no racer promoted: %+v", res)
		}
		sc, h := e.record(key)
		if sc.Transcript.Gen != 2 {
			e.fatalf("the key is at gen %d, want 2", sc.Transcript.Gen)
		}
		for _, x := range h {
			if x.Gen == 2 && x.Outcome == "" && x.Ticket != sess[winner].Ticket {
				e.fatalf("gen 2 in the history is not the winner's: %+v", x)
			}
		}
	}},
	{"promote/transcript-rewritten unless allowed", func(e *env) {
		for name, rewrite := range map[string]func(given []byte) []byte{
			"a changed byte":   func(g []byte) []byte { b := turn(g, "x", 10); b[bytes.Index(b, []byte("base"))] = 'B'; return b },
			"a truncation":     func(g []byte) []byte { return g[:len(g)-10] },
			"a different file": func([]byte) []byte { return turn(header(start.Add(1)), "other", 10) },
		} {
			k := store.Key("github", "rewrite", name)
			e.run(k, "base")
			before, _ := e.record(k)
			sess, jobDir, data := e.job(k, "rewriter")
			e.stage(jobDir, rewrite(data))
			res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
			if res.Promoted || res.Reason != gates.TranscriptRewritten {
				e.fatalf("%s: %+v, want transcript-rewritten", name, res)
			}
			sc, h := e.record(k)
			if !reflect.DeepEqual(sc, before) || h[len(h)-1].Outcome != string(gates.TranscriptRewritten) || h[len(h)-1].Ticket != sess.Ticket {
				e.fatalf("%s: a refused rewrite changed the key, or is not in its history: %+v", name, h[len(h)-1])
			}
			res = e.promote(sess, store.PromoteRequest{PiVersion: piVersion, AllowRewrite: true})
			if _, h = e.record(k); !res.Promoted || !res.Rewritten || res.Gen != 2 || !h[len(h)-1].Rewritten {
				e.fatalf("%s, allowed: %+v, history %+v", name, res, h[len(h)-1])
			}
		}
	}},
	{"promote/run-incomplete when an answered run is required", func(e *env) {
		for _, c := range []struct {
			name string
			add  func(given []byte) []byte
			run  transcript.Shape
		}{
			{"errored", func(g []byte) []byte {
				return pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "", "error", 0)
			}, transcript.Errored},
			{"unanswered", func(g []byte) []byte { return pientry.Message(g, "u1", "user", "q", "", 0) }, transcript.Unanswered},
			{"asking for tools", func(g []byte) []byte {
				return pientry.Message(pientry.Message(g, "u1", "user", "q", "", 0), "a1", "assistant", "calling", "toolUse", 40)
			}, transcript.Unanswered},
			{"unchanged", func(g []byte) []byte { return g }, transcript.Unchanged},
			// Entries but no message after the answer it was given (pi's
			// thinking level, then a crash before its first request; a
			// compaction alone): the run answered nothing.
			{"a thinking level, no message", func(g []byte) []byte {
				return entryAfter(g, `{"type":"thinking_level_change","id":"tl1","parentId":%q,"timestamp":"2026-12-08T01:31:09.859Z","thinkingLevel":"medium"}`)
			}, transcript.Unanswered},
			{"a compaction, no message", func(g []byte) []byte {
				return entryAfter(g, `{"type":"compaction","id":"cp1","parentId":%q,"timestamp":"2026-12-08T01:31:09.859Z","summary":"s","tokensBefore":10}`)
			}, transcript.Unanswered},
			// sessdb cannot read a branch that loops as pi does (pi loops
			// on it): how the run ended is unknown, not unanswered.
			{"a parentId cycle", func(g []byte) []byte { return loopTurn(g, "c") }, transcript.Unknown},
		} {
			k := store.Key("github", "shape", c.name)
			e.run(k, "base")
			before, beforeH := e.record(k)
			sess, jobDir, data := e.job(k, "shape")
			e.stage(jobDir, c.add(data))
			res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion, Require: transcript.Answered})
			if res.Promoted || res.Reason != gates.RunIncomplete || res.Run != c.run {
				e.fatalf("%s, answered required: %+v, want run-incomplete, run %s", c.name, res, c.run)
			}
			if again := e.promote(sess, store.PromoteRequest{PiVersion: piVersion, Require: transcript.Answered}); again.Reason != gates.RunIncomplete {
				e.fatalf("%s, refused again: %+v", c.name, again)
			}
			sc, h := e.record(k)
			if !reflect.DeepEqual(sc, before) || len(h) != len(beforeH)+1 || h[len(h)-1].Outcome != string(gates.RunIncomplete) {
				e.fatalf("%s: a refused run changed the key, or is not in its history once", c.name)
			}
			if res = e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Run != c.run {
				e.fatalf("%s, nothing required: %+v", c.name, res)
			}
			if _, h = e.record(k); h[len(h)-1].Run != string(c.run) {
				e.fatalf("%s: the history records run %q", c.name, h[len(h)-1].Run)
			}
		}
	}},
	{"promote/repeat: a retried ticket repeats its first result", func(e *env) {
		e.run(key, "base")
		sess, jobDir, data := e.job(key, "retrier")
		e.stage(jobDir, turn(data, "R", 100))
		first := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if !first.Promoted || first.Gen != 2 {
			e.fatalf("first: %+v", first)
		}
		for range 3 {
			again := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
			want := first
			want.Repeat = true
			if again != want {
				e.fatalf("retry = %+v, want %+v", again, want)
			}
		}
		e.run(key, "next")
		late := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if !late.Repeat || late.Gen != 2 || late.Bytes != first.Bytes {
			e.fatalf("retry after another promotion = %+v", late)
		}
		if sc, _ := e.record(key); sc.Transcript.Gen != 3 || *sc.ResumeChain != 2 {
			e.fatalf("gen %d chain %d, want 3 and 2: a retry counted twice", sc.Transcript.Gen, *sc.ResumeChain)
		}
	}},
	{"promote/repeat: another transcript of the first one's size is no repeat once the key moved on", func(e *env) {
		e.run(key, "base")
		sess, jobDir, data := e.job(key, "twice")
		first := turn(data, "R", 100)
		e.stage(jobDir, first)
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 {
			e.fatalf("first: %+v", res)
		}
		e.run(key, "next")
		// pi run again in the job dir: another answer, of the same size.
		next := bytes.Clone(first)
		i := bytes.LastIndex(next, []byte("answer R"))
		next[i+len("answer ")] = 'S'
		e.stage(jobDir, next)
		res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if res.Promoted || res.Repeat || res.Reason != gates.Superseded || res.SupersededBy != 3 {
			e.fatalf("the ticket with another transcript of the same size = %+v; want superseded by gen 3", res)
		}
		// The first transcript again is still a retry.
		e.stage(jobDir, first)
		if again := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !again.Promoted || !again.Repeat || again.Gen != 2 {
			e.fatalf("a retry with the first transcript = %+v", again)
		}
	}},
	{"promote/a torn tail gets its newline", func(e *env) {
		sess, jobDir := e.resolve(key, localJob())
		torn := append(turn(header(start), "whole", 10), `{"type":"message","id":"0000000`...)
		e.stage(jobDir, torn)
		res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if !res.Promoted || !res.TornTail || res.Bytes != int64(len(torn))+1 {
			e.fatalf("promote of a torn tail = %+v", res)
		}
		sess, jobDir = e.resolve(key, localJob())
		e.want(sess, true, gates.Resumed)
		if got := e.staged(jobDir); !bytes.Equal(got, append(torn, '\n')) {
			e.fatalf("resumed %q", got)
		}
		if _, h := e.record(key); len(h) != 1 || !h[0].TornTail {
			e.fatalf("history = %+v, want one entry with the torn tail", h)
		}
	}},
	{"promote/a ticket of another store writes nothing", func(e *env) {
		other := e.inst
		sess, jobDir, data := e.job(key, "A")
		e.stage(jobDir, turn(data, "A", 10))
		o := e.h.New(e.t)
		res, err := o.Open(store.Options{Now: e.clock.Now}).Promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if !errors.Is(err, store.ErrWrongRoot) || res.Promoted {
			e.fatalf("promote into another store = %+v, %v; want ErrWrongRoot", res, err)
		}
		for _, in := range []Instance{other, o} {
			if sc, h, err := in.Record(key); err != nil || sc != (db.Sidecars{}) || len(h) != 0 {
				e.fatalf("a refused ticket wrote %+v, %d entries (%v)", sc, len(h), err)
			}
		}
		re, ok := e.inst.(Respeller)
		if !ok {
			e.t.Skip("the instance is no storetest.Respeller: another spelling of its name not tried")
		}
		if res := e.promoteOn(re.Respelled(store.Options{Now: e.clock.Now}), sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted {
			e.fatalf("promote through another spelling of the same store = %+v", res)
		}
	}},
	{"promote/a Session read from its ticket whose key was changed writes nothing", func(e *env) {
		// The worker's code read the ticket (TicketFromJobDir) and then
		// changed its Key: into a key with no record, a cold run would
		// make that key; into one with a transcript, its refusal would be
		// recorded in that key's history. Either way the run was resolved
		// for the ticket's key.
		other := store.Key("github", "acme/widget", "pi/issue-2")
		for _, warm := range []bool{false, true} {
			if warm {
				e.run(key, "base")
				e.run(other, "other's")
			}
			sess, jobDir, data := e.job(key, fmt.Sprint("warm ", warm))
			e.stage(jobDir, turn(data, "mine", 100))
			read, err := store.ReadTicket(jobDir)
			if err != nil {
				e.fatalf("read the ticket: %v", err)
			}
			before, beforeH := e.record(key)
			otherSC, otherH := e.record(other)
			edited := read
			edited.Key = other
			res, err := e.s.Promote(edited, store.PromoteRequest{PiVersion: piVersion, TicketFromJobDir: true})
			if !errors.Is(err, store.ErrBadTicket) || errors.Is(err, store.ErrJobDirBusy) || res.Promoted || res.Reason != "" {
				e.fatalf("promote (warm %v) of the ticket's Session with another key = %+v, %v; want ErrBadTicket, nothing tried", warm, res, err)
			}
			e.unchanged(key, before, beforeH, "a refused promote")
			e.unchanged(other, otherSC, otherH, "a refused promote")
			if res := e.promote(read, store.PromoteRequest{PiVersion: piVersion, TicketFromJobDir: true}); !res.Promoted || res.Key != key || sess.Key != key {
				e.fatalf("promote (warm %v) of the ticket's Session as read = %+v, want promoted into its key", warm, res)
			}
		}
	}},
	{"promote/a ticket copied into another job dir before its promote promotes only from its own", func(e *env) {
		// A worker that copies a job dir (or reuses its ticket in a retry)
		// before the job promotes: the copy's run, whatever it holds, must
		// not be promoted as the job's, nor the job's own promote be told
		// it is a repeat of it. A job dir moved since its resolve, or named
		// through a link, is the job's own.
		e.run(key, "base")
		sess, jobDir, data := e.job(key, "copied")
		e.stage(jobDir, turn(data, "mine", 100))
		copyDir := filepath.Join(e.t.TempDir(), "copy")
		if err := os.CopyFS(copyDir, os.DirFS(jobDir)); err != nil {
			e.fatalf("copy the job dir: %v", err)
		}
		e.stage(copyDir, turn(data, "the copy's", 100))
		before, beforeH := e.record(key)
		if read, err := store.ReadTicket(copyDir); !errors.Is(err, store.ErrBadTicket) {
			e.fatalf("ReadTicket of the ticket copied into another job dir = %+v, %v; want ErrBadTicket", read, err)
		}
		e.unchanged(key, before, beforeH, "a copy's ticket refused")
		link := filepath.Join(e.t.TempDir(), "link")
		if err := os.Symlink(jobDir, link); err != nil {
			e.fatalf("link: %v", err)
		}
		read, err := store.ReadTicket(link)
		if err != nil || read.Ticket != sess.Ticket || read.JobDir != link {
			e.fatalf("ReadTicket of the job dir through a link = %+v, %v", read, err)
		}
		if res := e.promote(read, store.PromoteRequest{PiVersion: piVersion, TicketFromJobDir: true}); !res.Promoted || res.Repeat {
			e.fatalf("promote of the job's own run = %+v, want promoted", res)
		}
		if _, next := e.resolve(key, localJob()); lastText(e.staged(next)) != "answer mine" {
			e.fatalf("the key's last answer is %q, want the job's own", lastText(e.staged(next)))
		}

		// Moved since its resolve: its old name leads nowhere now.
		sess, jobDir, data = e.job(key, "moved")
		e.stage(jobDir, turn(data, "moved", 100))
		moved := filepath.Join(e.t.TempDir(), "moved")
		if err := os.Rename(jobDir, moved); err != nil {
			e.fatalf("move the job dir: %v", err)
		}
		read, err = store.ReadTicket(moved)
		if err != nil || read.Ticket != sess.Ticket {
			e.fatalf("ReadTicket of a job dir moved since its resolve = %+v, %v", read, err)
		}
		if res := e.promote(read, store.PromoteRequest{PiVersion: piVersion, TicketFromJobDir: true}); !res.Promoted {
			e.fatalf("promote of a moved job dir = %+v, want promoted", res)
		}
	}},
}

// entryAfter appends to g the entry line format makes of g's last entry
// id (its parentId).
func entryAfter(g []byte, format string) []byte {
	return append(bytes.Clone(g), fmt.Sprintf(format+"\n", pientry.LastID(g))...)
}
