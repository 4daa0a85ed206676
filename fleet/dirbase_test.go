package fleet

import (
	"errors"
	"os"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A resolve that finds the transcripts dir itself unavailable read
// nothing of the key's conversation, which is whole on the export: its
// store-unavailable cold start carries no base, as etcd's silence and a
// dir found unavailable when the command started (Unreachable) do, so
// the job's cold run, promoted once the dir is back, is superseded by
// the generation the key holds and never replaces the conversation. At
// the open, and under the copy (Lost). Before: the ticket carried the
// record's base, and the cold run was promoted as gen 2 over the
// conversation, which the next reap past the grace period swept.
func TestAJobResolvedWhileTheDirIsAwayNeverReplacesTheConversation(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	away := f.dir + ".away"
	goAway := func() {
		t.Helper()
		if err := os.Rename(f.dir, away); err != nil {
			t.Fatal(err)
		}
	}
	back := func() {
		t.Helper()
		if err := os.Rename(away, f.dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		resolve func(key string) (store.Session, string)
	}{
		{"at the open", func(key string) (store.Session, string) {
			goAway()
			defer back()
			return resolveOn(t, f.s, key)
		}},
		{"under the copy", func(key string) (store.Session, string) {
			f.b.hook = func(p, _ string) error {
				if p == hookSource {
					goAway()
					return errors.New("the export went away") // the copy's reads fail
				}
				return nil
			}
			defer func() { f.b.hook = nil; back() }()
			return resolveOn(t, f.s, key)
		}},
		// Gone between the generation's open and the read of its first
		// line: the read fails on the dir, not on the key. Before (mutant
		// V17 of mutfleet46's sweep: failed's dirUnavailable dropped), it
		// was transcript-replaced with the key's base, and the job's cold
		// run replaced the conversation once the dir was back.
		{"at its first line", func(key string) (store.Session, string) {
			f.b.hook = func(p, _ string) error {
				if p == hookHeader {
					goAway()
					return errors.New("the export went away") // the first line's read fails
				}
				return nil
			}
			defer func() { f.b.hook = nil; back() }()
			return resolveOn(t, f.s, key)
		}},
		{"when the command started", func(key string) (store.Session, string) {
			u, err := Unreachable(Config{Config: etcdmeta.Config{Endpoints: f.c.Endpoints(), Prefix: f.prefix}, TranscriptsDir: f.dir}, shared.ErrDirUnavailable)
			if err != nil {
				t.Fatal(err)
			}
			return resolveOn(t, store.NewOn(u, store.Options{}), key)
		}},
	} {
		key := store.Key("github", "dir-away-base", c.name)
		f.run(key, "one")
		sess, jobDir := c.resolve(key)
		if sess.Resume || sess.Reason != gates.StoreUnavailable {
			t.Fatalf("%s: resolve = %+v; want store-unavailable", c.name, sess)
		}
		if sess.Base != (store.Base{}) {
			t.Errorf("%s: the ticket's base is %+v; want none: nothing of the key was read", c.name, sess.Base)
		}
		appendMarker(t, jobDir, "cold")
		res, err := f.promote(sess)
		if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
			t.Errorf("%s: the job's promote once the dir is back = %+v, %v; want superseded by gen 1", c.name, res, err)
		}
		f.holds(key, "one", 1)
	}
}

// The same job promoted while the dir is still gone is superseded as
// well, before anything is written (the refusal is etcd's history
// alone), where the record's base would have had it try the dir and fail
// (promote-failed).
func TestAJobResolvedAndPromotedWhileTheDirIsAwayIsSuperseded(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-promote", "x")
	f.run(key, "one")
	away := f.dir + ".away"
	if err := os.Rename(f.dir, away); err != nil {
		t.Fatal(err)
	}
	sess, jobDir := resolveOn(t, f.s, key)
	appendMarker(t, jobDir, "cold")
	res, err := f.promote(sess)
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 1 {
		t.Errorf("promote with the dir still gone = %+v, %v; want superseded by gen 1", res, err)
	}
	if files := f.files(key); len(files) != 1 {
		t.Errorf("files %v; want the key's one generation", files)
	}
	f.holds(key, "one", 1)
}
