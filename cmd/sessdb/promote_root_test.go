package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A promote onto a sessions root that does not exist makes it (0700, with
// its missing parents): the first promote of a new deployment must, so it
// is not refused. But resolve warned that the root was missing (is it
// misspelt?), and the promote after it built that root in silence. It
// warns now, once, naming the root it made as resolve's warning names
// it (brief: quoted, a long one cut); its exit status and its JSON are what they were, and a promote onto
// a root that exists says nothing.
func TestPromoteWarnsWhenItMakesTheSessionsRoot(t *testing.T) {
	clearEnv(t)
	missing := filepath.Join(t.TempDir(), "nx", "a", "sesions")
	key := store.Key("github", "acme/widget", "pi/new-root")
	job := filepath.Join(t.TempDir(), "job-1")
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--venue", "local")
	if code != exitOK || !strings.Contains(out, `"reason":"absent"`) || !strings.Contains(errs, "does not exist") {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	appendAnswered(t, job, "1")
	code, out, errs = runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job, "--pi-version", "0.58.3")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted || p.Gen != 1 || p.Reason != "promoted" {
		t.Fatalf("promote onto a missing root: exit %d\n%s%s", code, out, errs)
	}
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "sessions root") || !strings.Contains(errs, brief(missing)) || !strings.Contains(errs, "made it") {
		t.Fatalf("promote onto a missing root: stderr %q; want one warning naming the root it made", errs)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the root after the promote: %v, %v; want a 0700 directory", fi, err)
	}

	// The root exists now: the next job's resolve and promote say nothing.
	job2 := filepath.Join(t.TempDir(), "job-2")
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", key, "--job-dir", job2, "--pi-version", "0.58.3", "--venue", "local"); code != exitOK || errs != "" || !strings.Contains(out, `"reason":"resumed"`) {
		t.Fatalf("resolve under the root made: exit %d\n%s%s", code, out, errs)
	}
	appendAnswered(t, job2, "2")
	code, out, errs = runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job2, "--pi-version", "0.58.3")
	if code != exitOK || errs != "" || !strings.Contains(out, `"gen":2`) {
		t.Fatalf("promote onto a root that exists: exit %d\n%s%s; want gen 2 and nothing on stderr", code, out, errs)
	}
	// A retry of the first promote (a repeat) makes nothing and says nothing.
	if code, out, errs := runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK || errs != "" || !strings.Contains(out, `"repeat":true`) {
		t.Fatalf("repeat: exit %d\n%s%s", code, out, errs)
	}
}
