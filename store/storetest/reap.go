package storetest

import (
	"slices"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// reapPromises are the legacy reaper's contract (legacy-store.md §4, its
// test 63): a key is removed once its last completed promotion is older
// than the TTL, a fresh one is kept, and a TTL of 0 keeps every key.
var reapPromises = []promise{
	{"reap/an expired key goes, a fresh one stays, and a TTL of 0 keeps every key", func(e *env) {
		const ttl = 14 * 24 * time.Hour
		mt := e.maintainer()
		old, fresh := key, store.Key("github", "acme/widget", "pi/issue-2")
		e.run(old, "old")
		e.clock.now = start.Add(10 * 24 * time.Hour)
		e.run(fresh, "fresh")
		e.clock.now = start.Add(ttl + time.Second)
		// A TTL of 0 is "keep forever": no key expires at resolve, and the
		// reaper removes none, however old.
		if removed, err := mt.Reap(store.Options{Now: e.clock.Now}); err != nil || len(removed) != 0 {
			e.fatalf("reap with a TTL of 0 = %v, %v; want nothing removed", removed, err)
		}
		sess, _ := e.resolve(old, localJob())
		e.want(sess, true, gates.Resumed)
		removed, err := mt.Reap(store.Options{Bounds: gates.Bounds{TTL: ttl}, Now: e.clock.Now})
		if err != nil || !slices.Equal(removed, []string{old}) {
			e.fatalf("reap with a TTL of %v = %v, %v; want only the key promoted %v ago", ttl, removed, err, ttl+time.Second)
		}
		sess, _ = e.resolve(old, localJob())
		e.want(sess, false, gates.Absent)
		sess, _ = e.resolveOn(e.with(gates.Bounds{TTL: ttl}), fresh, localJob())
		e.want(sess, true, gates.Resumed)
	}},
	{"reap/the clock is the last completed promotion: a resolve or a refused promotion does not move it", func(e *env) {
		const ttl = 14 * 24 * time.Hour
		mt := e.maintainer()
		s := e.with(gates.Bounds{TTL: ttl})
		e.run(key, "a")
		// A day before it expires, a job is handed the transcript (the
		// copy out) and its promotion is refused: neither completed a
		// promotion, so neither is the key's clock.
		e.clock.now = start.Add(ttl - 24*time.Hour)
		sess, jobDir := e.resolveOn(s, key, localJob())
		e.want(sess, true, gates.Resumed)
		e.stage(jobDir, turn(header(e.clock.now), "rewritten", 100))
		if res := e.promoteOn(s, sess, store.PromoteRequest{PiVersion: piVersion}); res.Reason != gates.TranscriptRewritten {
			e.fatalf("promote of a rewritten transcript = %+v, want transcript-rewritten", res)
		}
		e.clock.now = start.Add(ttl + time.Second)
		sess, _ = e.resolveOn(s, key, localJob())
		e.want(sess, false, gates.Expired)
		if removed, err := mt.Reap(store.Options{Bounds: gates.Bounds{TTL: ttl}, Now: e.clock.Now}); err != nil || !slices.Equal(removed, []string{key}) {
			e.fatalf("reap = %v, %v; want the key, its last promotion %v old", removed, err, ttl+time.Second)
		}
	}},
}

// maintainer is the instance's Maintainer, or skips the promise.
func (e *env) maintainer() Maintainer {
	e.t.Helper()
	mt, ok := e.inst.(Maintainer)
	if !ok {
		e.t.Skip("the instance is no storetest.Maintainer")
	}
	return mt
}
