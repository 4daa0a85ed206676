package sample

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

var update = flag.Bool("update", false, "rebuild testdata/sessions")

var shipped = filepath.Join("..", "..", "testdata", "sessions")

// TestSample proves that the shipped sample is what Build makes (rebuilt
// with -update) and that it shows what the README says it shows.
func TestSample(t *testing.T) {
	if *update {
		if err := os.RemoveAll(shipped); err != nil {
			t.Fatal(err)
		}
		if err := Build(shipped); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(t.TempDir(), "sessions")
	if err := Build(fresh); err != nil {
		t.Fatal(err)
	}
	got, want := reports(t, shipped), reports(t, fresh)
	if len(got) != len(want) {
		t.Fatalf("shipped sample has %d entries, Build makes %d (rerun with -update)", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("shipped sample differs from Build for %s (rerun with -update):\nshipped %s\nbuilt   %s", name, got[name], w)
		}
	}
	for key, layout := range Layouts() {
		var r store.KeyReport
		json.Unmarshal([]byte(got[key]), &r)
		if r.Layout != layout {
			t.Errorf("%s: layout %s, want %s", key, r.Layout, layout)
		}
	}
}

// TestSampleVerdicts pins the verdict each sample key gets an hour after
// the sample's clock, so the README's account of it stays true.
func TestSampleVerdicts(t *testing.T) {
	now := func() time.Time { return Time.Add(time.Hour) }
	s, err := store.New(shipped, store.Options{Now: now, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour, MaxBytes: 8 << 20, MaxResumeChain: 3}})
	if err != nil {
		t.Fatal(err)
	}
	local := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
	podman := local
	podman.Venue = "podman"
	for _, c := range []struct {
		key    string
		job    store.Job
		reason gates.Reason
	}{
		{Resumable, local, gates.Resumed},
		{Expired, local, gates.Expired},
		{LongChain, local, gates.ResumeChainTooLong},
		{Legacy, local, gates.Resumed},
		{Mixed, local, gates.VenueChanged}, // the legacy venue file beside meta.db says local; the db says podman
		{Mixed, podman, gates.Resumed},
	} {
		sess, err := s.Resolve(c.key, c.job, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if sess.Reason != c.reason {
			t.Errorf("%s for venue %s: %s, want %s", c.key, c.job.Venue, sess.Reason, c.reason)
		}
	}
}

// reports is Inspect's account of a sample, less what a checkout changes
// (file mtimes).
func reports(t *testing.T, root string) map[string]string {
	t.Helper()
	s, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = s.Inspect(store.HistoryLimitForDump, func(r store.KeyReport) error {
		if r.Transcript != nil {
			r.Transcript.ModTime = time.Time{}
		}
		// Ticket ids are random by design: two builds differ in nothing
		// else, and every entry must still have one.
		for i := range r.History {
			if len(r.History[i].Ticket) != 32 {
				t.Errorf("%s gen %d: ticket id %q", r.Name, r.History[i].Gen, r.History[i].Ticket)
			}
			r.History[i].Ticket = ""
		}
		b, err := json.Marshal(r)
		out[r.Name] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
