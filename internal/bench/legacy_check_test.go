package bench

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
	slegacy "sessdb/store/legacy"
)

// The baseline is only worth comparing with if it is the legacy store: what
// its promotion writes must be what the legacy readers (and sessdb's
// fallback for legacy key dirs) accept, and its resolve must reach the
// verdicts the ladder gives.

var data = []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/w"}` + "\n" +
	`{"type":"message","id":"1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}` + "\n")

var opts = legacyOptions{Bounds: gates.Bounds{MaxBytes: 8 << 20, TTL: 24 * time.Hour, MaxResumeChain: 100, MaxContextPct: 90}}

func staged(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), stagedDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, transcriptName)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPromoteWritesWhatTheLegacyReadersRead(t *testing.T) {
	for _, durable := range []bool{false, true} {
		root := t.TempDir()
		key := store.Key("github", "acme/widget", "pi/issue-1")
		kd := filepath.Join(root, key)
		src := staged(t)
		o := opts
		o.Durable = durable
		for i := 0; i < 3; i++ {
			res, err := legacyPromote(kd, src, Session{Resume: i > 0, Venue: "local", Model: "a/b"}, Request{PiVersion: "0.58.3", Context: &Reading{Tokens: 10, Window: 100}}, o)
			if err != nil || !res.Promoted || res.Bytes != int64(len(data)) || len(res.SidecarErrors) > 0 {
				t.Fatalf("durable=%v promote %d: %+v, %v", durable, i, res, err)
			}
		}
		got, err := os.ReadFile(filepath.Join(kd, transcriptName))
		if err != nil || string(got) != string(data) {
			t.Fatalf("transcript %q, %v", got, err)
		}
		d, err := os.Open(kd)
		if err != nil {
			t.Fatal(err)
		}
		if v := slegacy.ReadVenue(d); v.Value != "local" {
			t.Errorf("venue %+v", v)
		}
		if v := slegacy.ReadPiVersion(d); v.Value != "0.58.3" {
			t.Errorf("pi-version %+v", v)
		}
		if c := slegacy.ReadResumeChain(d); c != 2 {
			t.Errorf("resume-chain %d, want 2 (two resumed promotions after a cold one)", c)
		}
		if c := slegacy.ReadContext(d); c == nil || c.Tokens != 10 || c.Window != 100 || c.Model != "a/b" {
			t.Errorf("context %+v", c)
		}
		d.Close()
		names, _ := os.ReadDir(kd)
		if len(names) != 5 {
			t.Errorf("key dir holds %d entries, want the transcript and four sidecars: %v", len(names), names)
		}

		// sessdb's fallback for a key dir without meta.db resumes it.
		s, err := store.New(root, store.Options{Bounds: opts.Bounds})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local", Model: "a/b"}, t.TempDir())
		if err != nil || !sess.Resume {
			t.Errorf("store.Resolve of the legacy key: %+v, %v", sess, err)
		}
	}
}

func TestResolveVerdicts(t *testing.T) {
	root := t.TempDir()
	kd := filepath.Join(root, "k")
	if _, err := legacyPromote(kd, staged(t), Session{Resume: true, Venue: "local"}, Request{PiVersion: "0.58.3"}, opts); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		job  Job
		want gates.Reason
	}{
		{Job{PiVersion: "0.58.3", Venue: "local"}, gates.Resumed},
		{Job{PiVersion: "0.1.0", Venue: "local"}, gates.PiVersionChanged},
		{Job{PiVersion: "", Venue: "local"}, gates.PiVersionChanged},
		{Job{PiVersion: "0.58.3", Venue: "podman"}, gates.VenueChanged},
		{Job{PiVersion: "0.58.3", Venue: ""}, gates.VenueChanged},
	} {
		jobDir := t.TempDir()
		v, err := legacyResolve(kd, jobDir, c.job, opts)
		if err != nil || v.Reason != c.want {
			t.Errorf("%+v: %+v, %v; want %s", c.job, v, err, c.want)
			continue
		}
		got, err := os.ReadFile(filepath.Join(jobDir, stagedDirName, transcriptName))
		want := ""
		if v.Resume {
			want = string(data)
		}
		if err != nil || string(got) != want {
			t.Errorf("%+v: staged %d bytes (%v), want %d", c.job, len(got), err, len(want))
		}
	}
	if v, err := legacyResolve(filepath.Join(root, "none"), t.TempDir(), Job{PiVersion: "0.58.3", Venue: "local"}, opts); err != nil || v.Reason != gates.Absent {
		t.Errorf("missing key dir: %+v, %v", v, err)
	}
}

func TestPromoteRefusesAndLocks(t *testing.T) {
	kd := filepath.Join(t.TempDir(), "k")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(staged(t), link)
	for p, want := range map[string]gates.Reason{empty: gates.Absent, link: gates.NotARegularFile, filepath.Join(dir, "none"): gates.Absent} {
		if res, err := legacyPromote(kd, p, Session{Venue: "local"}, Request{}, opts); err != nil || res.Reason != want {
			t.Errorf("%s: %+v %v, want %s", p, res, err, want)
		}
	}
	if _, err := os.Lstat(kd); err == nil {
		t.Errorf("a refused promotion created the key dir")
	}
	os.MkdirAll(kd, 0o700)
	os.WriteFile(filepath.Join(kd, lockName), nil, 0o600)
	if res, err := legacyPromote(kd, staged(t), Session{Venue: "local"}, Request{}, opts); err != nil || res.Reason != gates.Locked {
		t.Errorf("fresh lock: %+v %v, want locked", res, err)
	}
	old := time.Now().Add(-2 * lockStale)
	os.Chtimes(filepath.Join(kd, lockName), old, old)
	if res, err := legacyPromote(kd, staged(t), Session{Venue: "local"}, Request{}, opts); err != nil || !res.Promoted {
		t.Errorf("stale lock: %+v %v, want it taken over", res, err)
	}
	if _, err := os.Lstat(filepath.Join(kd, lockName)); err == nil {
		t.Errorf("the lock was left behind")
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	for _, k := range []string{"a", "b", "c"} {
		if err := legacySeed(filepath.Join(root, k), data, "0.58.3", "local", 3, "1 2 m/x"); err != nil {
			t.Fatal(err)
		}
	}
	for _, workers := range []int{1, 2, 5} {
		var mu sync.Mutex
		seen := map[string]KeyInfo{}
		if err := legacyWalk(root, workers, func(k KeyInfo) { mu.Lock(); seen[k.Name] = k; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 {
			t.Fatalf("%d workers: saw %d keys", workers, len(seen))
		}
		k := seen["b"]
		if !k.HeaderOK || k.HeaderID != "x" || k.Sidecars != [4]string{"0.58.3", "local", "3", "1 2 m/x"} || k.Size != int64(len(data)) {
			t.Errorf("%d workers: %+v", workers, k)
		}
	}
}
