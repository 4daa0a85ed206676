package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag a fleet refuses (check's --accept, --quarantine and
// --deep-check-timeout act on a key dir's files) says in its help that it
// is a sessions root's, and one a sessions root refuses (--grace) that it is
// a fleet's: the usage line puts them beside both stores, and a worker or an
// operator reading the help alone met an exit 2 it had not been told of.
// The flags are found by running each of the walks' own flags on both
// stores, so a flag added later is held to the same rule.
func TestFlagsOneStoreRefusesSaySoInTheirHelp(t *testing.T) {
	startFleet(t)
	fleetEnv := map[string]string{}
	for _, k := range []string{"PI_SESSIONS_ETCD_ENDPOINTS", "PI_SESSIONS_TRANSCRIPTS_DIR", "PI_SESSIONS_ETCD_PREFIX"} {
		fleetEnv[k] = os.Getenv(k)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	flagsOf := func(c *command) map[string]*flag.Flag {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.bind(fs)
		m := map[string]*flag.Flag{}
		fs.VisitAll(func(f *flag.Flag) { m[f.Name] = f })
		return m
	}
	// The flags every walk shares (configuration, fleet, logging) are no
	// walk's own.
	walks := map[string][]string{"dump": nil, "check": {"--repair"}, "reap": {"--dry-run"}}
	common := map[string]bool{}
	first := true
	for _, c := range commands {
		if _, ok := walks[c.name]; !ok {
			continue
		}
		fl := flagsOf(c)
		for n := range common {
			if fl[n] == nil {
				delete(common, n)
			}
		}
		if first {
			for n := range fl {
				common[n] = true
			}
			first = false
		}
	}
	guesses := []string{strings.Repeat("a", 32), "1s", "1", "2026-11-29T10:00:00Z"}
	checked := 0
	for _, c := range commands {
		base, ok := walks[c.name]
		if !ok {
			continue
		}
		for name, fl := range flagsOf(c) {
			if common[name] {
				continue
			}
			var values []string
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				values = []string{""}
			} else {
				values = guesses
			}
			for _, store := range []struct {
				refusal, says string
				env           map[string]string
				dir           []string
			}{
				{"a fleet has none", "sessions root", fleetEnv, nil},
				{"it needs --etcd-endpoints", "fleet", nil, []string{root}},
			} {
				refused := false
				for _, v := range values {
					clearEnv(t)
					for k, val := range store.env {
						t.Setenv(k, val)
					}
					args := append([]string{c.name}, base...)
					if name != strings.TrimPrefix(firstOr(base), "--") {
						args = append(args, "--"+name)
						if v != "" {
							args = append(args, v)
						}
					}
					_, _, errs := runCLI(t, append(args, store.dir...)...)
					checked++
					refused = refused || strings.Contains(errs, store.refusal)
				}
				if refused && !strings.Contains(fl.Usage, store.says) {
					t.Errorf("sessdb %s --%s is refused (%q) but its help does not say it is a %s's: %q", c.name, name, store.refusal, store.says, fl.Usage)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("%d runs: the walks' own flags were not found", checked)
	}
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
