package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

// writeLegacy lays out a key dir as the legacy worker left it.
func writeLegacy(t *testing.T, root, key string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLegacyKeyResolvesWithLegacyRules(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{MaxResumeChain: 3, MaxContextPct: 80})
	body := string(transcriptBytes(clock.now, "legacy turn"))
	cases := []struct {
		name   string
		files  map[string]string
		reason gates.Reason
	}{
		{"all stamps", map[string]string{"pi-version": testPi, "venue": "local\n", "resume-chain": " 2 ", "context": "1000 200000 anthropic/claude-sonnet-4-5"}, gates.Resumed},
		{"no venue file means local", map[string]string{"pi-version": testPi}, gates.Resumed},
		{"empty venue file is unreadable", map[string]string{"pi-version": testPi, "venue": ""}, gates.VenueChanged},
		{"pending sentinel", map[string]string{"pi-version": testPi, "venue": "(pending)"}, gates.VenueChanged},
		{"empty pi-version", map[string]string{"pi-version": ""}, gates.PiVersionChanged},
		{"chain at the bound", map[string]string{"pi-version": testPi, "resume-chain": "3"}, gates.ResumeChainTooLong},
		{"chain 007 reads as 0", map[string]string{"pi-version": testPi, "resume-chain": "007"}, gates.Resumed},
		{"context over the bound", map[string]string{"pi-version": testPi, "context": "190000 200000"}, gates.ContextTooFull},
		{"context of another model", map[string]string{"pi-version": testPi, "context": "190000 200000 openai/gpt-5"}, gates.Resumed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := Key("github", "legacy/repo", c.name)
			files := map[string]string{TranscriptName: body}
			for k, v := range c.files {
				files[k] = v
			}
			writeLegacy(t, root, key, files)
			before := treeState(t, filepath.Join(root, key))
			sess, jobDir := mustResolve(t, s, key, localJob())
			want(t, sess, c.reason == gates.Resumed, c.reason)
			if sess.Resume && string(staged(t, jobDir)) != body {
				t.Fatal("staged copy differs")
			}
			if after := treeState(t, filepath.Join(root, key)); after != before {
				t.Fatal("resolving a legacy key changed it")
			}
		})
	}
}

func TestFirstPromotionOfALegacyKeyContinuesItsChain(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy")),
		"pi-version":   testPi, "venue": "local", "resume-chain": "2",
		"context": "1000 200000 anthropic/claude-sonnet-4-5",
	})
	sess, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "first sessdb run")
	if !sess.Resume || res.Gen != 1 {
		t.Fatalf("resolve %+v, promote %+v", sess, res)
	}
	sc := sidecarsOf(t, root, testKey)
	if sc.ResumeChain == nil || *sc.ResumeChain != 3 {
		t.Fatalf("chain after the first db promotion = %v, want 3 (legacy 2 + this delivery)", sc.ResumeChain)
	}
	// The reading is the promoted transcript's own, not the legacy one.
	if end := endOf(t, readCanonical(t, root, testKey)); sc.Context == nil || sc.Context.Tokens != end.Tokens || sc.Context.Model != testModel {
		t.Fatalf("the first db promotion stored %+v, pi reads %d tokens", sc.Context, end.Tokens)
	}
	var layout Layout
	s.Inspect(0, func(r KeyReport) error { layout = r.Layout; return nil })
	if layout != LayoutMixed {
		t.Fatalf("layout after the first promotion = %s, want mixed", layout)
	}
	// From now on meta.db is authoritative: a legacy file saying otherwise
	// is ignored.
	os.WriteFile(filepath.Join(root, testKey, "venue"), []byte("podman"), 0o600)
	got, _ := mustResolve(t, s, testKey, localJob())
	want(t, got, true, gates.Resumed)
}

func TestLockedKey(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "kept")
	s.opts.LockTimeout = 100 * time.Millisecond
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("discarded")...))

	dir, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	holder, err := db.OpenWriter(dir, "meta.db", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := treeState(t, root)
	start := time.Now()
	res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Locked {
		t.Fatalf("promote under a held lock = %+v", res)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("locked after %v, want about the 100ms timeout", waited)
	}
	if after := treeState(t, root); after != before {
		t.Fatal("a locked promotion changed the store")
	}
	cold, _ := mustResolve(t, s, testKey, localJob())
	want(t, cold, false, gates.Locked)
	holder.Close()
	got, _ := mustResolve(t, s, testKey, localJob())
	want(t, got, true, gates.Resumed)
}

// A meta.db with no record at all (a migration, a first promotion or a
// reap's lock caught before its commit) vouches for nothing: the legacy
// files still decide.
func TestEmptyMetaDBDefersToLegacyFiles(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{MaxResumeChain: 3})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy")),
		"pi-version":   testPi, "venue": "local", "resume-chain": "1",
	})
	dir, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, err := db.OpenWriter(dir, "meta.db", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	os.WriteFile(filepath.Join(root, testKey, "resume-chain"), []byte("3"), 0o600)
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.ResumeChainTooLong)
}
