package storetest

import (
	"bytes"
	"errors"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// The ladder, rung by rung, as far as a store's own promotions can reach
// it (the rungs only damage reaches are in damage.go).
var resolvePromises = []promise{
	{"resolve/a key never promoted is absent", func(e *env) {
		sess, _ := e.resolve(key, localJob())
		e.want(sess, false, gates.Absent)
		if sess.Base != (store.Base{}) {
			e.fatalf("the base of a key never promoted = %+v, want none", sess.Base)
		}
	}},
	{"resolve/a promoted key resumes the same bytes", func(e *env) {
		_, res := e.run(key, "first")
		sess, jobDir := e.resolve(key, localJob())
		e.want(sess, true, gates.Resumed)
		sc, _ := e.record(key)
		got := e.staged(jobDir)
		if sess.Gen() != res.Gen || sess.Bytes != res.Bytes || sc.Transcript == nil ||
			sc.Transcript.Size != int64(len(got)) || sc.Transcript.CRC32C != uint64(crc(got)) || lastText(got) != "answer first" {
			e.fatalf("resumed gen %d, %d bytes ending %q; promoted %+v; record %+v", sess.Gen(), len(got), lastText(got), res, sc.Transcript)
		}
	}},
	{"resolve/an invalid key is an error", func(e *env) {
		for _, k := range []string{"", "../x", "2DC0F8DDC6A9B84A405D1CD6AB3055A9"} {
			if _, err := e.s.Resolve(k, localJob(), e.t.TempDir()); !errors.Is(err, store.ErrInvalidKey) {
				e.fatalf("Resolve(%q) = %v, want ErrInvalidKey", k, err)
			}
		}
	}},
	{"resolve/too-large over the byte cap", func(e *env) {
		_, res := e.run(key, "x")
		sess, _ := e.resolveOn(e.with(gates.Bounds{MaxBytes: res.Bytes - 1}), key, localJob())
		e.want(sess, false, gates.TooLarge)
		sess, _ = e.resolveOn(e.with(gates.Bounds{MaxBytes: res.Bytes}), key, localJob())
		e.want(sess, true, gates.Resumed)
	}},
	{"resolve/expired by the recorded promotion time", func(e *env) {
		const ttl = 14 * 24 * time.Hour
		e.run(key, "x")
		s := e.with(gates.Bounds{TTL: ttl})
		e.clock.now = start.Add(ttl)
		sess, _ := e.resolveOn(s, key, localJob())
		e.want(sess, true, gates.Resumed)
		e.clock.now = start.Add(ttl + time.Second)
		sess, _ = e.resolveOn(s, key, localJob())
		e.want(sess, false, gates.Expired)
		sess, _ = e.resolve(key, localJob()) // TTL 0 keeps forever
		e.want(sess, true, gates.Resumed)
	}},
	{"resolve/venue-changed", func(e *env) {
		far := localJob()
		far.Venue = "podman"
		e.runOn(e.s, key, far, store.PromoteRequest{}, "on podman")
		sess, _ := e.resolve(key, localJob())
		e.want(sess, false, gates.VenueChanged)
		sess, _ = e.resolve(key, far)
		e.want(sess, true, gates.Resumed)
		// A job whose venue is unknown never resumes, and what it promotes
		// carries a stamp no venue matches.
		none := localJob()
		none.Venue = ""
		sess, _ = e.resolve(key, none)
		e.want(sess, false, gates.VenueChanged)
		e.runOn(e.s, key, none, store.PromoteRequest{}, "nowhere")
		for _, j := range []store.Job{localJob(), far, none} {
			sess, _ = e.resolve(key, j)
			e.want(sess, false, gates.VenueChanged)
		}
	}},
	{"resolve/pi-version-changed", func(e *env) {
		e.run(key, "a")
		for _, c := range []struct {
			pi     string
			resume bool
		}{{piVersion, true}, {"0.58.4", false}, {"", false}} {
			j := localJob()
			j.PiVersion = c.pi
			sess, _ := e.resolve(key, j)
			if c.resume {
				e.want(sess, true, gates.Resumed)
			} else {
				e.want(sess, false, gates.PiVersionChanged)
			}
		}
		// A promotion that knows no pi version leaves an unknown stamp,
		// which refuses every job.
		sess, jobDir := e.resolve(key, localJob())
		e.stage(jobDir, turn(e.staged(jobDir), "b", 10))
		e.promote(sess, store.PromoteRequest{})
		sess, _ = e.resolve(key, localJob())
		e.want(sess, false, gates.PiVersionChanged)
	}},
	{"resolve/resume-chain-too-long, then the chain starts over", func(e *env) {
		s := e.with(gates.Bounds{MaxResumeChain: 3})
		for i, w := range []struct {
			resume bool
			chain  uint64
		}{{false, 0}, {true, 1}, {true, 2}, {true, 3}, {false, 0}, {true, 1}} {
			sess, _ := e.runOn(s, key, localJob(), store.PromoteRequest{}, "run")
			if sess.Resume != w.resume || (i == 4 && sess.Reason != gates.ResumeChainTooLong) {
				e.fatalf("run %d: %s, want resume %v", i+1, describe(sess), w.resume)
			}
			if sc, _ := e.record(key); sc.ResumeChain == nil || *sc.ResumeChain != w.chain {
				e.fatalf("after run %d the chain is %v, want %d", i+1, sc.ResumeChain, w.chain)
			}
		}
	}},
	{"resolve/the chain counts with its bound off", func(e *env) {
		for range 5 {
			e.run(key, "run")
		}
		if sc, _ := e.record(key); sc.ResumeChain == nil || *sc.ResumeChain != 4 {
			e.fatalf("chain %v after five runs, want 4", sc.ResumeChain)
		}
		sess, _ := e.resolveOn(e.with(gates.Bounds{MaxResumeChain: 4}), key, localJob())
		e.want(sess, false, gates.ResumeChainTooLong)
	}},
	{"resolve/context-too-full for the same model only", func(e *env) {
		s := e.with(gates.Bounds{MaxContextPct: 80})
		for _, c := range []struct {
			tokens int64
			resume bool
		}{{159999, true}, {160000, false}} {
			e.runOn(s, key, localJob(), store.PromoteRequest{Tokens: tokens(c.tokens), Window: 200000}, "x")
			sess, _ := e.resolveOn(s, key, localJob())
			if c.resume {
				e.want(sess, true, gates.Resumed)
			} else {
				e.want(sess, false, gates.ContextTooFull)
			}
			other := localJob()
			other.Model = "anthropic/claude-opus-4-5"
			sess, _ = e.resolveOn(s, key, other)
			e.want(sess, true, gates.Resumed)
		}
	}},
	{"resolve/context-too-full whatever the case of the model's id", func(e *env) {
		// pi writes the model's id as its provider spells it; the job's
		// is normalised. The rung compares the two in one form.
		s := e.with(gates.Bounds{MaxContextPct: 80})
		job := localJob()
		job.Model = "huggingface/Qwen/Qwen3-Coder-Next"
		sess, jobDir := e.resolveOn(s, key, job)
		data := turn(header(e.clock.now), "qwen", 100)
		for _, r := range [][2]string{
			{`"provider":"anthropic","modelId":"claude-sonnet-4-5"`, `"provider":"huggingface","modelId":"Qwen/Qwen3-Coder-Next"`},
			{`"provider":"anthropic","model":"claude-sonnet-4-5"`, `"provider":"huggingface","model":"Qwen/Qwen3-Coder-Next"`},
		} {
			data = bytes.ReplaceAll(data, []byte(r[0]), []byte(r[1]))
		}
		e.stage(jobDir, data)
		if res := e.promoteOn(s, sess, store.PromoteRequest{PiVersion: piVersion, Tokens: tokens(90), Window: 100}); !res.Promoted {
			e.fatalf("promote = %+v", res)
		}
		for _, m := range []string{job.Model, "HuggingFace/qwen/QWEN3-coder-next"} {
			job.Model = m
			sess, _ := e.resolveOn(s, key, job)
			e.want(sess, false, gates.ContextTooFull)
		}
	}},
	{"resolve/unparseable first line", func(e *env) {
		for i, first := range []string{"not json\n", `{"type":"message"}` + "\n"} {
			k := store.Key("github", "acme/widget", string(rune('a'+i)))
			sess, jobDir := e.resolve(k, localJob())
			e.stage(jobDir, append([]byte(first), header(start)...))
			if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted {
				e.fatalf("promote = %+v", res)
			}
			sess, _ = e.resolve(k, localJob())
			e.want(sess, false, gates.Unparseable)
		}
	}},
	{"resolve/conversation-too-old by its header", func(e *env) {
		s := e.with(gates.Bounds{MaxAge: 7 * 24 * time.Hour})
		for i, c := range []struct {
			head   []byte
			reason gates.Reason
		}{
			{header(start.Add(-8 * 24 * time.Hour)), gates.ConversationTooOld},
			{header(start.Add(-6 * 24 * time.Hour)), gates.Resumed},
			{header(start.Add(24 * time.Hour)), gates.Resumed}, // a future timestamp passes
			{bytes.Replace(header(start), []byte(`"timestamp":"2026`), []byte(`"timestamp":"yesterday 2026`), 1), gates.ConversationTooOld},
		} {
			k := store.Key("github", "acme/widget", string(rune('a'+i)))
			sess, jobDir := e.resolve(k, localJob())
			e.stage(jobDir, turn(c.head, "x", 10))
			e.promote(sess, store.PromoteRequest{PiVersion: piVersion})
			sess, _ = e.resolveOn(s, k, localJob())
			e.want(sess, c.reason == gates.Resumed, c.reason)
		}
	}},
}
