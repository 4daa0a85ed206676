package store

import (
	"bytes"
	"testing"

	"sessdb/gates"
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
