package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Only a name that began with PI_SESSION was warned of: a typo in the
// prefix itself (PI_SESSONS_TTL_DAYS=30), or the name in lower case,
// left the bound at its default without a word, and a reap with a TTL
// meant to be 30 days removed the keys of 14 to 30 days. Such a name is
// warned of now, naming the variable it misspells; a worker's own
// variables, far from every one of sessdb's, are not.
func TestAVariableMisspeltOutsideThePrefixIsNamed(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"PI_SESSONS_TTL_DAYS", "PI_SESSIONS_TTL_DAYS"},
		{"PI_SESIONS_DIR", "PI_SESSIONS_DIR"},
		{"P_SESSIONS_DIR", "PI_SESSIONS_DIR"},
		{"PI_SESISON_MAX_BYTES", "PI_SESSION_MAX_BYTES"},
		{"pi_sessions_ttl_days", "PI_SESSIONS_TTL_DAYS"},
		{"Pi_Session_Max_Context_Pct", "PI_SESSION_MAX_CONTEXT_PCT"},
		{"PI_BACKENDS", ""},
		{"PI_SWEEP_INTERVAL_HOURS", ""},
		{"PI_MAX_TOKENS", ""},
		{"HOME", ""},
		{strings.Repeat("PI_SESSONS_DIR", 5000), ""},
	} {
		t.Run(c.name[:min(len(c.name), 40)], func(t *testing.T) {
			atSampleTime(t)
			root := copySample(t)
			t.Setenv(c.name, "30")
			code, _, errs := runCLI(t, "stats", "--log-format", "console", root)
			warned := strings.Contains(errs, "did you mean")
			if code != exitOK || warned != (c.want != "") || c.want != "" && !strings.Contains(errs, bounded(c.name)+" is not a variable sessdb reads, and is ignored; did you mean "+c.want+"?") {
				t.Errorf("%.40s=30: exit %d, stderr %q; want a warning naming %q", c.name, code, errs, c.want)
			}
		})
	}
}

// The legacy worker's own variables under the prefix (its gate on resuming
// under GITHUB_AUTH_SOURCE=gh, which its processor applies before the
// token mint, and the container's PI_SESSION_FILE) were warned of at every
// command as a misspelling of PI_SESSIONS_DIR or PI_SESSION_MODELS_FILE: a
// deployment keeps them for the worker, and could not act on the warning.
// They are not warned of; a misspelling of one of sessdb's still is.
func TestTheWorkersOwnVariablesAreNotTakenForMisspellings(t *testing.T) {
	for _, c := range []struct {
		name   string
		warned bool
	}{
		{"PI_SESSIONS_ALLOW_GH_SOURCE", false},
		{"PI_SESSION_FILE", false},
		{"PI_SESSION_MODEL_FILE", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			atSampleTime(t)
			root := copySample(t)
			t.Setenv(c.name, "1")
			code, _, errs := runCLI(t, "stats", "--log-format", "console", root)
			if code != exitOK || strings.Contains(errs, c.name) != c.warned {
				t.Errorf("%s=1: exit %d, stderr %q; want it named: %v", c.name, code, errs, c.warned)
			}
		})
	}
}

// misspelt's filter (bagDistance) must never pass by a typo: every name one
// edit from a variable sessdb reads (a byte dropped, changed or added, two
// next to each other swapped), and two drops or two changes, is still
// found.
func TestEveryTypoOfAVariableIsFound(t *testing.T) {
	known := knownEnv()
	for _, k := range known {
		var typos []string
		for i := range len(k) {
			typos = append(typos, k[:i]+k[i+1:], k[:i]+"Q"+k[i+1:], k[:i]+"Q"+k[i:])
			if i+1 < len(k) {
				typos = append(typos, k[:i]+k[i+1:i+2]+k[i:i+1]+k[i+2:])
			}
			if i+2 < len(k) {
				typos = append(typos, k[:i]+k[i+1:i+2]+k[i+3:], k[:i]+"QZ"+k[i+2:])
			}
		}
		for _, typo := range typos {
			if typo != k && misspelt(typo, known) == "" && !slices.Contains(known, typo) {
				t.Errorf("%q, a typo of %s: not found", typo, k)
			}
		}
	}
}

func BenchmarkUnknownEnv(b *testing.B) {
	env := []string{"HOME=/root", "PATH=/usr/bin", "PI_BACKENDS=podman", "PI_SWEEP_INTERVAL_HOURS=24", "PI_SESSIONS_DIR=/srv/sessions"}
	for len(env) < 60 {
		env = append(env, fmt.Sprintf("KUBERNETES_SERVICE_%d_PORT=443", len(env)))
	}
	for b.Loop() {
		unknownEnv(env)
	}
}
