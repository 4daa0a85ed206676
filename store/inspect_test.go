package store

import (
	"context"
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
// real resolves with several jobs.
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
		// A crash between a promotion's commit and its rename: a resolve
		// serves the temp, or, once the temp is lost, the generation
		// before it; with that generation gone too, nothing.
		"crashed before its rename": func(key string) { commitWithoutRenameAt(t, s, root, key) },
		"crashed before its rename, temp lost": func(key string) {
			os.Remove(commitWithoutRenameAt(t, s, root, key))
		},
		"crashed before its rename, temp damaged": func(key string) {
			tmp := commitWithoutRenameAt(t, s, root, key)
			b, _ := os.ReadFile(tmp)
			b[len(b)-3] ^= 0xff
			os.WriteFile(tmp, b, 0o600)
		},
		"crashed before its rename, temp lost, transcript replaced": func(key string) {
			os.Remove(commitWithoutRenameAt(t, s, root, key))
			os.WriteFile(filepath.Join(root, key, TranscriptName), transcriptBytes(clock.now, entryLine("another")), 0o600)
		},
	}
	jobs := []Job{localJob(), other, {PiVersion: testPi, Venue: "podman", Model: "anthropic/claude-sonnet-4-5"}, {PiVersion: testPi, Venue: "local", Model: "openai/gpt-5"}}
	for name, build := range keys {
		t.Run(name, func(t *testing.T) {
			key := Key("github", "acme/verdict", name)
			build(key)
			for _, verify := range []bool{false, true} {
				none := inspectOne(t, s, key, InspectOptions{Verify: verify}).Verdict
				var reasons []string
				for _, job := range jobs {
					sess, _ := mustResolve(t, s, key, job)
					got := inspectOne(t, s, key, InspectOptions{Job: &job, Verify: verify}).Verdict
					// Without --verify a same-size edit is only found by the copy.
					if got.Reason != string(sess.Reason) && !(name == "edited same size" && !verify) {
						t.Errorf("verify=%v job %+v: dump says %s, resolve says %s", verify, job, got.Reason, sess.Reason)
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
				if u := slices.Compact(reasons); len(u) == 1 {
					t.Errorf("verify=%v: every job got %s, but dump said ?", verify, reasons[0])
				}
			}
		})
	}
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
