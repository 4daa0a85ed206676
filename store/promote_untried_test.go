package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/store/transcript"
)

// A Promote that returns an error before it tries (a Session or request it
// refuses, a ticket from another root) returns the key and nothing else:
// no reason, so that a caller never reads promote-failed, a fault of a
// promotion tried, or a refusal, for a promotion that was never tried.
// The sessions root is unchanged, and the job's run promotes after.
func TestAPromoteRefusedBeforeItTriesHasNoOutcome(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("b")...))
	before := treeState(t, root)
	other, err := New(filepath.Join(t.TempDir(), "other"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	edited := func(edit func(*Session)) Session { e := sess; edit(&e); return e }
	negative := int64(-1)
	for _, c := range []struct {
		name  string
		store *Store
		sess  Session
		req   PromoteRequest
		err   error
	}{
		{"a key that is no key", s, edited(func(e *Session) { e.Key = "KEY" }), PromoteRequest{PiVersion: testPi}, ErrInvalidKey},
		{"a shape no run may be required to have", s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Errored}, ErrBadRequest},
		{"a negative window", s, sess, PromoteRequest{PiVersion: testPi, Window: -1}, ErrBadRequest},
		{"negative tokens", s, sess, PromoteRequest{PiVersion: testPi, Tokens: &negative}, ErrBadRequest},
		{"a pi version too long", s, sess, PromoteRequest{PiVersion: strings.Repeat("9", MaxValueBytes+1)}, ErrValueTooLong},
		{"a promote outcome for a reason", s, edited(func(e *Session) { e.Reason = gates.Promoted }), PromoteRequest{PiVersion: testPi}, ErrBadTicket},
		{"another root's ticket", other, sess, PromoteRequest{PiVersion: testPi}, ErrWrongRoot},
	} {
		res, err := c.store.Promote(c.sess, c.req)
		if err == nil || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
		if want := (PromoteResult{Key: c.sess.Key}); res != want {
			t.Errorf("%s: result %+v, want %+v: nothing was tried", c.name, res, want)
		}
	}
	if after := treeState(t, root); after != before {
		t.Fatalf("the sessions root changed:\n%s\nwas\n%s", after, before)
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
		t.Fatalf("the run after: %+v, want gen 2 promoted", res)
	}
}
