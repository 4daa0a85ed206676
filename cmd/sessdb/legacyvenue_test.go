package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The legacy worker took a job's venue from PI_BACKENDS' first backend
// (run.backend aside); sessdb reads --venue alone, local when not given.
// A deployment whose PI_BACKENDS names another backend first, and whose
// resolve gives no --venue, had each key its legacy workers stamped so
// cold-start venue-changed, and then stamped local for a run that ran
// elsewhere, without a word: resolve says so now, on stderr, and resolves
// as before. Where --venue is given, or PI_BACKENDS names local first,
// there is nothing to say.
func TestAResolveWithoutVenueBesideALegacyBackendListSaysSo(t *testing.T) {
	for _, c := range []struct {
		backends string
		venue    bool
		warned   bool
	}{
		{"podman", false, true},
		{" podman , local", false, true},
		{"local,podman", false, false},
		{"local", false, false},
		{"podman", true, false},
		{"", false, false},
	} {
		clearEnv(t)
		root := copySample(t)
		t.Setenv("PI_BACKENDS", c.backends)
		args := []string{"resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14",
			"--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3", "--log-format", "console"}
		if c.venue {
			args = append(args, "--venue", "podman")
		}
		code, out, errs := runCLI(t, args...)
		said := strings.Contains(errs, "PI_BACKENDS")
		if code != exitOK || !strings.Contains(out, `"reason":`) || said != c.warned {
			t.Errorf("PI_BACKENDS=%q, --venue given %v: exit %d, stdout %q, stderr %q; want a verdict, and a warning naming PI_BACKENDS: %v", c.backends, c.venue, code, out, errs, c.warned)
		}
		if c.warned && (!strings.Contains(errs, "podman") || !strings.Contains(errs, "--venue") || !strings.Contains(errs, "venue-changed")) {
			t.Errorf("PI_BACKENDS=%q: stderr %q; want the backend named, --venue and venue-changed", c.backends, errs)
		}
	}
}

// A PI_BACKENDS in a form the comma and white-space split does not read
// (a JSON list, another separator) was warned of naming the split's first
// piece as the backend, and advising it as --venue: '["local","podman"]'
// warned of the backend `["local"` and advised --venue ["local", a venue
// no key was ever stamped with, where its first backend is local. A JSON
// list of names is read as one; any other form is warned of without a
// backend to give (nothing is named that is not a name).
func TestALegacyBackendListInAnotherFormNamesNoBogusVenue(t *testing.T) {
	for _, c := range []struct {
		backends string
		warned   bool
		advice   string // what the warning must say, or must not (bogus)
		bogus    bool
	}{
		{`["local","podman"]`, false, "", false},
		{`[ "local" ]`, false, "", false},
		{`[]`, false, "", false},
		{`["podman","local"]`, true, "give --venue podman ", false},
		{`[" podman "]`, true, "give --venue podman ", false},
		{`local;podman`, true, "give --venue local;podman", true},
		{`["local",`, true, `give --venue ["local"`, true},
	} {
		w := legacyVenue(false, c.backends)
		if (w != "") != c.warned {
			t.Errorf("PI_BACKENDS=%q: warning %q; want one: %v", c.backends, w, c.warned)
			continue
		}
		if !c.warned {
			continue
		}
		if strings.Contains(w, c.advice) == c.bogus {
			t.Errorf("PI_BACKENDS=%q: warning %q; want %q in it: %v", c.backends, w, c.advice, !c.bogus)
		}
		if !strings.Contains(w, "PI_BACKENDS") || !strings.Contains(w, "venue-changed") {
			t.Errorf("PI_BACKENDS=%q: warning %q; want PI_BACKENDS and venue-changed named", c.backends, w)
		}
	}
}
