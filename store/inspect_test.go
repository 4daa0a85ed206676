package store

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

func inspectOne(t *testing.T, s *Store, key string, opts InspectOptions) KeyReport {
	t.Helper()
	opts.Only = key
	var got []KeyReport
	if err := s.InspectWith(context.Background(), opts, func(r KeyReport) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d reports for one key", len(got))
	}
	return got[0]
}

// The verdict dump shows is the verdict a resolve gets: for a given job
// exactly, and without one, either the verdict every job gets or "?" with
// what a job matching the stamps gets. Each key below is judged against
// real resolves with several jobs, and against a resolve by the job that
// matches its stamps: check's "resolve: ..." and stats' count say what
// that resolve says, and --verify reads what a resolve copies (ok where
// the copy is accepted, mismatch where it cold-starts the key).
func TestVerdictIsWhatResolveSays(t *testing.T) {
	bounds := gates.Bounds{TTL: 14 * 24 * time.Hour, MaxResumeChain: 3, MaxContextPct: 80}
	s, root, clock := newTestStore(t, bounds)
	other := Job{PiVersion: "0.60.0", Venue: "podman", Model: "openai/gpt-5"}
	os.MkdirAll(root, 0o700) // for the key that is absent
	keys := map[string]func(key string){
		"resumes": func(key string) { runJob(t, s, key, localJob(), PromoteRequest{}, "a") },
		"expired": func(key string) {
			clock.now = clock.now.Add(-30 * 24 * time.Hour)
			runJob(t, s, key, localJob(), PromoteRequest{}, "a")
			clock.now = clock.now.Add(30 * 24 * time.Hour)
		},
		"long chain": func(key string) {
			for range 5 {
				runJob(t, s, key, localJob(), PromoteRequest{}, "a")
			}
		},
		"context full, same model": func(key string) {
			runJob(t, s, key, localJob(), PromoteRequest{Tokens: tok(90), Window: 100}, "a")
		},
		"unknown pi version": func(key string) {
			runJob(t, s, key, Job{Venue: "local"}, PromoteRequest{PiVersion: ""}, "a")
		},
		"podman": func(key string) { runJob(t, s, key, Job{PiVersion: testPi, Venue: "podman"}, PromoteRequest{}, "a") },
		"edited same size": func(key string) {
			runJob(t, s, key, localJob(), PromoteRequest{}, "a")
			p := filepath.Join(root, key, TranscriptName)
			b, _ := os.ReadFile(p)
			b[len(b)-4] ^= 1
			os.WriteFile(p, b, 0o600)
		},
		"grown": func(key string) {
			runJob(t, s, key, localJob(), PromoteRequest{}, "a")
			f, _ := os.OpenFile(filepath.Join(root, key, TranscriptName), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(entryLine("appended out of band"))
			f.Close()
		},
		"damaged db": func(key string) {
			runJob(t, s, key, localJob(), PromoteRequest{}, "a")
			os.Truncate(chkDB(root, key), 100)
		},
		"legacy pending venue": func(key string) {
			writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now)), "venue": "(pending)", "pi-version": testPi})
		},
		"absent": func(string) {},
	}
	// Only the copy (or --verify) reads a file whole: without --verify, a
	// same-size edit shows at the next resolve only (a pending temp's too:
	// a resolve reads it whole before its ladder, dump judges it whole by
	// its size).
	sameSize := map[string]bool{"edited same size": true}
	for _, c := range crashStates(t, s, root) {
		keys[c.name] = c.build
		sameSize[c.name] = c.sameSize
	}
	jobs := []Job{localJob(), other, {PiVersion: testPi, Venue: "podman", Model: "anthropic/claude-sonnet-4-5"}, {PiVersion: testPi, Venue: "local", Model: "openai/gpt-5"}}
	wantStats := map[string]int64{}
	for name, build := range keys {
		t.Run(name, func(t *testing.T) {
			key := Key("github", "acme/verdict", name)
			build(key)
			// The job whose venue, pi version and model are the key's
			// stamps: what dump's "?/R", check and stats name.
			var matched gates.Reason
			if r := inspectOne(t, s, key, InspectOptions{}); r.Verdict.Reason == Undetermined {
				j := Job{PiVersion: deref(r.PiVersion), Venue: "local", Model: localJob().Model}
				if r.Venue != nil {
					j.Venue = *r.Venue
				}
				if r.Context != nil && r.Context.Model != "" {
					j.Model = r.Context.Model
				}
				sess, _ := mustResolve(t, s, key, j)
				matched = sess.Reason
			} else {
				matched = gates.Reason(r.Verdict.Reason)
			}
			for _, verify := range []bool{false, true} {
				none := inspectOne(t, s, key, InspectOptions{Verify: verify}).Verdict
				var reasons []string
				for _, job := range jobs {
					sess, _ := mustResolve(t, s, key, job)
					r := inspectOne(t, s, key, InspectOptions{Job: &job, Verify: verify})
					got := r.Verdict
					if got.Reason != string(sess.Reason) && !(sameSize[name] && !verify) {
						t.Errorf("verify=%v job %+v: dump says %s, resolve says %s", verify, job, got.Reason, sess.Reason)
					}
					if verify {
						checkVerifyIsTheCopy(t, job, r.Verify, sess.Reason)
					}
					reasons = append(reasons, string(sess.Reason))
				}
				slices.Sort(reasons)
				if none.Reason != Undetermined {
					if reasons[0] != none.Reason || reasons[len(reasons)-1] != none.Reason {
						t.Errorf("verify=%v: no-job verdict %s, but resolves said %v", verify, none.Reason, reasons)
					}
					continue
				}
				if len(none.Needs) < 2 || none.IfMatched == "" {
					t.Errorf("undetermined verdict without what it needs: %+v", none)
				}
				if u := slices.Compact(reasons); len(u) == 1 && !(sameSize[name] && !verify) {
					t.Errorf("verify=%v: every job got %s, but dump said ?", verify, reasons[0])
				}
				if none.IfMatched != string(matched) && !(sameSize[name] && !verify) {
					t.Errorf("verify=%v: dump says ?/%s, the resolve of the job matching the stamps says %s", verify, none.IfMatched, matched)
				}
			}
			found, _ := chkRun(t, s, false)
			for _, f := range found {
				if f.Key == key && f.Kind == KindTranscriptMismatch && !strings.HasSuffix(f.Detail, "; resolve: "+string(matched)) {
					t.Errorf("check: %q, but the resolve of the job matching the stamps says %s", f.Detail, matched)
				}
			}
			// stats reads no transcript whole: a same-size edit counts as
			// dump without --verify shows it (below). A key with no dir
			// is not under the root.
			if _, err := os.Lstat(filepath.Join(root, key)); err == nil && !sameSize[name] {
				wantStats[string(matched)]++
			}
		})
	}
	// stats counts each key by the verdict of the job matching its stamps.
	st, err := s.Stats(context.Background(), StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name := range keys {
		if sameSize[name] {
			r := inspectOne(t, s, Key("github", "acme/verdict", name), InspectOptions{})
			wantStats[cmp.Or(r.Verdict.IfMatched, r.Verdict.Reason)]++
		}
	}
	for _, c := range st.Verdicts {
		if c.N != wantStats[c.Label] {
			t.Errorf("stats counts %d keys %s, resolves say %d", c.N, c.Label, wantStats[c.Label])
		}
	}
}

// crashState is a state a crash between a promotion's commit and its
// rename can leave a key in, with what happened since.
type crashState struct {
	name     string
	build    func(key string)
	sameSize bool // the temp was damaged in place: only a read tells
}

// crashStates are a crash between a promotion's commit (gen 2) and its
// rename, with its temp and the file in place (gen 1) in every state they
// can be found in: a resolve serves the temp; from a damaged one it falls
// back to gen 1 in place (else promotion-lost), and with the temp lost it
// resumes gen 1 (else transcript-replaced, or absent).
func crashStates(t *testing.T, s *Store, root string) []crashState {
	temps := []struct {
		name string
		hurt func(tmp string)
	}{
		{"intact", func(string) {}},
		{"damaged", func(p string) { b, _ := os.ReadFile(p); b[len(b)-3] ^= 0xff; os.WriteFile(p, b, 0o600) }}, // same size
		{"grown", func(p string) { // a byte appended: the audit's damage
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("x")
			f.Close()
		}},
		{"lost", func(p string) { os.Remove(p) }},
	}
	places := []struct {
		name   string
		change func(key string)
	}{
		{"gen 1", func(string) {}},
		{"replaced", func(key string) {
			os.WriteFile(filepath.Join(root, key, TranscriptName), transcriptBytes(s.opts.Now(), entryLine("another")), 0o600)
		}},
		{"missing", func(key string) { os.Remove(filepath.Join(root, key, TranscriptName)) }},
	}
	var out []crashState
	for _, tmp := range temps {
		for _, place := range places {
			out = append(out, crashState{
				name: fmt.Sprintf("crashed before its rename, temp %s, transcript %s", tmp.name, place.name),
				build: func(key string) {
					tmp.hurt(commitWithoutRenameAt(t, s, root, key))
					place.change(key)
				},
				sameSize: tmp.name == "damaged",
			})
		}
	}
	return out
}

// checkVerifyIsTheCopy checks dump --verify against a resolve's copy: a
// copy the key accepted was read as ok (no-record for a key without one),
// one it refused as a mismatch.
func checkVerifyIsTheCopy(t *testing.T, job Job, v *VerifyReport, got gates.Reason) {
	t.Helper()
	switch got {
	case gates.Resumed:
		if v == nil || v.Result != VerifyOK && v.Result != VerifyNoRecord {
			t.Errorf("job %+v resumed, but dump --verify says %+v", job, v)
		}
	case gates.TranscriptReplaced, gates.PromotionLost:
		if v == nil || v.Result != VerifyMismatch {
			t.Errorf("job %+v: resolve says %s, but dump --verify says %+v", job, got, v)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// The model matters only where the context rung would judge differently.
func TestVerdictNeedsModelOnlyForTheContextRung(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{MaxContextPct: 80})
	full, light := Key("github", "a/b", "full"), Key("github", "a/b", "light")
	runJob(t, s, full, localJob(), PromoteRequest{Tokens: tok(90), Window: 100}, "a")
	runJob(t, s, light, localJob(), PromoteRequest{Tokens: tok(10), Window: 100}, "a")
	v := inspectOne(t, s, full, InspectOptions{}).Verdict
	if v.Reason != Undetermined || v.IfMatched != string(gates.ContextTooFull) || !slices.Contains(v.Needs, "model") {
		t.Fatalf("full context: %+v", v)
	}
	v = inspectOne(t, s, light, InspectOptions{}).Verdict
	if v.Reason != Undetermined || v.IfMatched != string(gates.Resumed) || slices.Contains(v.Needs, "model") {
		t.Fatalf("light context: %+v", v)
	}
}

func TestInspectReportsMetaPagesAndVerify(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "pages")
	r := inspectOne(t, s, key, InspectOptions{Verify: true})
	m := r.MetaPages
	if m == nil || len(m.Pages) != 2 || m.Fallback || m.PageSize == 0 || m.HighWater > m.Bytes || m.Active < 0 {
		t.Fatalf("meta pages of a healthy file: %+v", m)
	}
	if newer := m.Pages[m.Active].Txid; newer <= m.Pages[1-m.Active].Txid {
		t.Fatalf("bbolt uses the older page of a healthy file: %+v", m)
	}
	if r.Verify == nil || r.Verify.Result != VerifyOK || r.Verify.Bytes != r.Transcript.Bytes || r.RecordBytes == nil || *r.RecordBytes != r.Transcript.Bytes {
		t.Fatalf("verify of a healthy key: %+v", r.Verify)
	}

	// Corrupt the newest page: bbolt silently uses the other one; the
	// report shows it.
	f, _ := os.OpenFile(chkDB(root, key), os.O_RDWR, 0)
	b := make([]byte, 1)
	off := int64(m.Active*m.PageSize + 16 + 60) // inside the checksum
	f.ReadAt(b, off)
	b[0] ^= 0xff
	f.WriteAt(b, off)
	f.Close()
	r2 := inspectOne(t, s, key, InspectOptions{})
	m2 := r2.MetaPages
	if !m2.Fallback || m2.Active != 1-m.Active || m2.Pages[m.Active].Valid || m2.Pages[m.Active].Error == "" {
		t.Fatalf("after the newest page was damaged: %+v", m2)
	}
	if d := m2.fallbackDetail(); d == "" || !strings.Contains(d, "last commit is lost") {
		t.Fatalf("fallback detail %q", d)
	}
	if r2.Gen != r.Gen-1 && r2.Pending == nil {
		t.Fatalf("the fall-back is not to the older commit: gen %d -> %d", r.Gen, r2.Gen)
	}
}

// dump with --verify, over keys in every state, including damaged ones,
// changes no byte and no mtime.
func TestInspectWithVerifyIsReadOnly(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	for _, c := range chkDamages {
		key := chkKey(t, s, c.name)
		c.damage(t, s, root, key)
	}
	os.WriteFile(filepath.Join(root, "README.txt"), []byte("x"), 0o600)
	before := treeState(t, root)
	n := 0
	err := s.InspectWith(context.Background(), InspectOptions{History: 64, Verify: true, Workers: 3}, func(r KeyReport) error { n++; return nil })
	if err != nil || n != len(chkDamages)+1 {
		t.Fatalf("%d reports, %v", n, err)
	}
	if after := treeState(t, root); after != before {
		t.Fatalf("InspectWith changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A key with an empty meta.db beside its legacy files (a migration or a
// first promotion that died before its commit) is judged by the legacy
// files, and dump reports those stamps, as the resolve reads them.
func TestEmptyMetaDBBesideLegacyFilesReportsTheLegacyStamps(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now)), "venue": "local", "pi-version": testPi, "resume-chain": "2",
	})
	kd, err := fsat.OpenDir(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	kd.Close()
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	r := inspectOne(t, s, testKey, InspectOptions{})
	if r.Layout != LayoutLegacy || r.PiVersion == nil || *r.PiVersion != testPi || r.Venue == nil || *r.Venue != "local" || r.ResumeChain == nil || *r.ResumeChain != 2 {
		t.Fatalf("dump of a legacy key beside an empty meta.db: layout %s, pi version %v, venue %v, chain %v; want the legacy stamps", r.Layout, r.PiVersion, r.Venue, r.ResumeChain)
	}
}

// A transcript that is a symbolic link is reported with the link's own
// size and time, never zeros standing in for them (docs/json.md), and is
// never followed: the verdict is not-a-regular-file.
func TestInspectReportsALinkedTranscriptByTheLink(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	dir := filepath.Join(root, testKey)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const target = "/nonexistent/elsewhere.jsonl"
	if err := os.Symlink(target, filepath.Join(dir, TranscriptName)); err != nil {
		t.Fatal(err)
	}
	r := inspectOne(t, s, testKey, InspectOptions{})
	if r.Verdict == nil || r.Verdict.Reason != string(gates.NotARegularFile) {
		t.Fatalf("verdict = %+v, want not-a-regular-file", r.Verdict)
	}
	if tr := r.Transcript; tr == nil || tr.Regular || tr.Bytes != int64(len(target)) || tr.ModTime.IsZero() {
		t.Fatalf("transcript = %+v, want the link's own size (%d) and a real mtime", r.Transcript, len(target))
	}
}
