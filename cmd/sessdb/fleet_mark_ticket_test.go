package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A promote refused for its ticket (none in the job dir, one that does
// not parse, one another fleet's resolve wrote) on a fleet that has not
// yet marked its transcripts dir writes nothing: no mark in the dir, no
// fleet ID in etcd; the fleet's first promotion of a ticket of its own
// then makes both. Before, the promote claimed the dir before it read
// its ticket: each of these marked the dir and made the fleet's ID.
func TestFleetPromoteRefusedForItsTicketClaimsNothing(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/ticket-first")
	unmarked := func(what string) {
		t.Helper()
		if names, err := os.ReadDir(f.dir); err != nil || len(names) != 0 {
			t.Errorf("%s: the transcripts dir holds %d entries (%v); want nothing written", what, len(names), err)
		}
		if r, err := f.c.Client(t).Get(t.Context(), f.prefix+"/fleet"); err != nil || r.Count != 0 {
			t.Errorf("%s: the fleet's ID in etcd: %v (%v); want none made", what, r.Kvs, err)
		}
	}

	none := t.TempDir()
	garbled := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbled, store.TicketName), []byte("{not a ticket"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another fleet's ticket: resolved on another transcripts dir (a
	// resolve writes nothing in either dir, nor in etcd).
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	_, other := f.resolve(t, key, "job-other")
	appendAnswered(t, other, "other")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	unmarked("the resolve on another dir")

	for _, c := range []struct {
		what, dir string
		code      int
		says      string
	}{
		{"no ticket", none, exitFault, "read ticket"},
		{"a ticket that does not parse", garbled, exitFault, "ticket"},
		{"another fleet's ticket", other, exitUsage, "another sessions root"},
	} {
		code, out, errs := runCLI(t, "promote", "--job-dir", c.dir, "--pi-version", "0.58.3")
		if code != c.code || out != "" || !strings.Contains(errs, c.says) {
			t.Errorf("promote with %s: exit %d, stdout %q, stderr %q; want exit %d saying %q", c.what, code, out, errs, c.code, c.says)
		}
		unmarked("promote with " + c.what)
	}

	f.run(t, key, "job-a")
	if _, err := os.Lstat(filepath.Join(f.dir, ".sessdb-fleet")); err != nil {
		t.Errorf("the mark after the fleet's own promotion: %v", err)
	}
	if r, err := f.c.Client(t).Get(t.Context(), f.prefix+"/fleet"); err != nil || r.Count != 1 {
		t.Errorf("the fleet's ID after its own promotion: %v (%v)", r.Kvs, err)
	}
}
