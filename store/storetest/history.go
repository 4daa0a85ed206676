package storetest

import (
	"bytes"
	"fmt"
	"sessdb/internal/pientry"

	"sessdb/db"
	"sessdb/store"
	"sessdb/store/transcript"
)

// The audit history.
var historyPromises = []promise{
	{"history/every promotion with its job, ticket, run and base", func(e *env) {
		var tickets []string
		for i := range 3 {
			sess, jobDir, data := e.job(key, fmt.Sprint("job-", i))
			e.stage(jobDir, turn(data, fmt.Sprint(i), 10))
			e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
			tickets = append(tickets, sess.Ticket)
		}
		_, h := e.record(key)
		if len(h) != 3 {
			e.fatalf("%d history entries after 3 promotions", len(h))
		}
		for i, x := range h {
			g := uint64(i + 1)
			if x.Gen != g || x.Job != fmt.Sprint("job-", i) || x.Resumed != (i > 0) || x.Chain != uint64(i) ||
				x.Ticket != tickets[i] || x.Run != string(transcript.Answered) || x.BaseGen != g-1 || x.Outcome != "" || x.At != start.UnixNano() {
				e.fatalf("history[%d] = %+v", i, x)
			}
		}
	}},
	{"history/keeps the newest entries", func(e *env) {
		n := db.HistoryLimit + 6
		for range n {
			e.run(key, "x")
		}
		_, h := e.record(key)
		if len(h) != db.HistoryLimit {
			e.fatalf("%d entries after %d promotions, want %d", len(h), n, db.HistoryLimit)
		}
		for i, x := range h {
			if want := uint64(n - db.HistoryLimit + i + 1); x.Gen != want {
				e.fatalf("history[%d] is gen %d, want %d: not the newest, or out of order", i, x.Gen, want)
			}
		}
	}},
}

// The context reading a promotion records: pi's own, at the end of the
// run, unless the runner overrides it.
var readingPromises = []promise{
	{"reading/pi's own reading and model, the window from pi's models", func(e *env) {
		sess, jobDir, data := e.job(key, "")
		data = turn(data, "a", 61234)
		e.stage(jobDir, data)
		e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		end, err := transcript.ReadEnd(bytes.NewReader(data))
		if err != nil || !end.Known {
			e.fatalf("the fixture has no reading: %+v, %v", end, err)
		}
		if sc, _ := e.record(key); sc.Context == nil || *sc.Context != (db.Context{Tokens: end.Tokens, Window: 200000, Model: model}) {
			e.fatalf("context = %+v, pi says %d tokens of %s in a 200000 window", sc.Context, end.Tokens, end.Model)
		}
	}},
	{"reading/the runner's numbers override", func(e *env) {
		e.runOn(e.s, key, localJob(), store.PromoteRequest{Tokens: tokens(12345), Window: 100000}, "a")
		if sc, _ := e.record(key); sc.Context == nil || *sc.Context != (db.Context{Tokens: 12345, Window: 100000, Model: model}) {
			e.fatalf("context after an override = %+v", sc.Context)
		}
	}},
	{"reading/an unknown reading clears the last one", func(e *env) {
		e.runOn(e.s, key, localJob(), store.PromoteRequest{Tokens: tokens(150000), Window: 200000}, "a")
		// After a compaction pi reports nothing until a fresh usage.
		sess, jobDir := e.resolve(key, localJob())
		data := pientry.Message(e.staged(jobDir), "a-1", "assistant", "long answer", "stop", 190000)
		data = append(data, `{"type":"compaction","id":"cmp-1","parentId":"a-1","timestamp":"2026-11-01T12:00:00.000Z","summary":"s","firstKeptEntryId":"a-1","tokensBefore":190000}`+"\n"...)
		data = pientry.Message(data, "u-2", "user", "go on", "", 0)
		e.stage(jobDir, data)
		e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if sc, _ := e.record(key); sc.Context != nil {
			e.fatalf("a reading pi does not know was kept: %+v", sc.Context)
		}
		// A model with no known window is no measurement either.
		e.runOn(e.s, key, localJob(), store.PromoteRequest{Tokens: tokens(10), Window: 100}, "b")
		sess, jobDir = e.resolve(key, localJob())
		data = e.staged(jobDir)
		e.stage(jobDir, append(data, `{"type":"model_change","id":"mc000002","parentId":"`+pientry.LastID(data)+`","timestamp":"2026-11-01T12:00:00.000Z","provider":"mock","modelId":"unknown-model"}`+"\n"...))
		e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
		if sc, _ := e.record(key); sc.Context != nil {
			e.fatalf("an unknown window kept a reading: %+v", sc.Context)
		}
		// The runner's window makes it one again.
		sess, jobDir = e.resolve(key, localJob())
		e.stage(jobDir, e.staged(jobDir))
		res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion, Window: 100000})
		if sc, _ := e.record(key); !res.Promoted || res.Run != transcript.Unchanged || sc.Context == nil || sc.Context.Window != 100000 || sc.Context.Model != "mock/unknown-model" {
			e.fatalf("promote %+v, context with the runner's window = %+v", res, sc.Context)
		}
	}},
	{"reading/a cold run's own reading is kept", func(e *env) {
		e.runOn(e.s, key, localJob(), store.PromoteRequest{Tokens: tokens(150000), Window: 200000}, "a")
		other := localJob()
		other.PiVersion = "0.59.0"
		sess, _ := e.runOn(e.s, key, other, store.PromoteRequest{Tokens: tokens(777), Window: 200000}, "b")
		if sess.Resume {
			e.fatalf("the run was not cold: %s", describe(sess))
		}
		if sc, _ := e.record(key); sc.Context == nil || sc.Context.Tokens != 777 || *sc.ResumeChain != 0 {
			e.fatalf("after a cold run: context %+v, chain %v", sc.Context, sc.ResumeChain)
		}
	}},
}
