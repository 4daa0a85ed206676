package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Etcd endpoints that are blank (white space only: a template or a secret
// that came out empty) are a configuration error naming them, exit 2, in
// every command that reads them, with a sessions root set or not. Before,
// resolve, dump, check, reap and migrate said endpoint 1 was no URL, or
// named the root beside them as "both set", and stats took them for a
// fleet: it refused without a root and, with one, counted it.
func TestBlankEtcdEndpointsAreRefusedByEveryCommand(t *testing.T) {
	root := copySample(t)
	job := filepath.Join(t.TempDir(), "job")
	key := "4668107cac2e99b44415c5606b32ef14"
	commands := [][]string{
		{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3"},
		{"promote", "--job-dir", job, "--pi-version", "0.58.3"},
		{"dump"}, {"check"}, {"reap", "--dry-run"}, {"stats"}, {"migrate", "--dry-run"},
	}
	for _, blank := range []string{" ", "\n", "\t \r\n"} {
		for _, withRoot := range []bool{false, true} {
			for _, args := range commands {
				if args[0] == "migrate" && !withRoot {
					continue // migrate needs a root first: sessions-dir-unset
				}
				clearEnv(t)
				t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", blank)
				if withRoot {
					t.Setenv("PI_SESSIONS_DIR", root)
				}
				code, out, errs := runCLI(t, args...)
				if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 ||
					!strings.Contains(errs, "PI_SESSIONS_ETCD_ENDPOINTS") || !strings.Contains(errs, "blank") {
					t.Errorf("%q, PI_SESSIONS_ETCD_ENDPOINTS=%q, root set %v: exit %d, stdout %q, stderr %q; want exit 2, one line naming the variable blank",
						args, blank, withRoot, code, brief(out), errs)
				}
			}
		}
	}
	// The flag, where a command takes it, is named as given.
	for _, args := range commands {
		if args[0] == "stats" {
			continue // stats takes no fleet flag
		}
		clearEnv(t)
		if args[0] == "migrate" {
			t.Setenv("PI_SESSIONS_DIR", root)
		}
		code, out, errs := runCLI(t, append(args, "--etcd-endpoints", " ")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "--etcd-endpoints") || !strings.Contains(errs, "blank") {
			t.Errorf("%q --etcd-endpoints ' ': exit %d, stdout %q, stderr %q; want exit 2 naming the flag blank", args, code, brief(out), errs)
		}
	}
}
