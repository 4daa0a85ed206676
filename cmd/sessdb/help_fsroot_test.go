package main

import (
	"strings"
	"testing"
)

// resolve and promote refuse a sessions root, or a fleet's transcripts
// dir, that is the filesystem root (exit 2; cli.md's conventions say so):
// each one's help says so too, where it lists the other usage errors.
// Before, neither help named it.
func TestHelpOfResolveAndPromoteNamesTheFilesystemRootRefusal(t *testing.T) {
	for _, cmd := range []string{"resolve", "promote"} {
		code, out, errs := runCLI(t, "help", cmd)
		text := strings.Join(strings.Fields(out), " ")
		if code != exitOK || !strings.Contains(text, "a transcripts dir) that is the filesystem root") {
			t.Errorf("help %s: exit %d; want it to name the refusal of the filesystem root\n%s%s", cmd, code, out, errs)
		}
	}
}
