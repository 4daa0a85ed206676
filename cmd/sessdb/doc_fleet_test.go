package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/sharedtest"
)

// docs/fleet.md's two workers (§3) run as the doc shows them: its
// fake_pi, taken from the doc's own heredoc, and each sh block's resolve,
// fake_pi and promote lines in order, against a fleet on one member; the
// JSON lines printed must be the block's after it, the doc's /run/jobs
// being the test's jobs dir. Then §4's first check and reap --dry-run
// (the outage's block and the tables, which hold times, are not run).
// TestDocCommands runs no command that writes, and none on a fleet.
func TestDocFleetWalk(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run the doc's fake_pi with")
	}
	src, err := os.ReadFile(filepath.Join(sharedtest.ModuleRoot(), "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	const heredoc = "cat > /etc/sessdb/fake-pi.sh <<'EOF'\n"
	i := strings.Index(doc, heredoc)
	if i < 0 {
		t.Fatal("docs/fleet.md no longer writes /etc/sessdb/fake-pi.sh with a heredoc")
	}
	body := doc[i+len(heredoc):]
	fakePi := filepath.Join(t.TempDir(), "fake-pi.sh")
	if err := os.WriteFile(fakePi, []byte(body[:strings.Index(body, "\nEOF\n")+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t)
	jobs := f.jobs
	swap := func(s string) string { return strings.ReplaceAll(s, "/run/jobs/", jobs+"/") }

	section := doc[strings.Index(doc, "\n## 3. Two workers"):strings.Index(doc, "\nWhen etcd does not answer")]
	section += doc[strings.Index(doc, "\nRight after the jobs above"):strings.Index(doc, "\nThe grace period is an hour by default")]
	blocks := strings.Split(section, "\n```")
	ran := 0
	// blocks alternate: text, a block's info string and body, text, ...
	for b := 1; b+2 < len(blocks); b += 2 {
		if !strings.HasPrefix(blocks[b], "sh\n") || !strings.HasPrefix(blocks[b+2], "\n") {
			continue // not a sh block followed by its output
		}
		var got []string
		lines := strings.Split(strings.TrimPrefix(blocks[b], "sh\n"), "\n")
		for j := 0; j < len(lines); j++ {
			cmd := lines[j]
			for strings.HasSuffix(cmd, "\\") && j+1 < len(lines) {
				j++
				cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[j])
			}
			fields := strings.Fields(swap(cmd))
			switch {
			case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
			case fields[0] == "fake_pi":
				out, err := exec.Command("bash", "-c", `. "$0"; fake_pi "$1" "$2"`, fakePi, fields[1], fields[2]).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", cmd, err, out)
				}
			case fields[0] == "sessdb":
				code, out, errs := runCLI(t, fields[1:]...)
				if code != exitOK {
					t.Fatalf("%s: exit %d\n%s", cmd, code, errs)
				}
				got = append(got, strings.Split(strings.TrimRight(out, "\n"), "\n")...)
				ran++
			default:
				t.Fatalf("docs/fleet.md's block runs %q, which this test does not know", cmd)
			}
		}
		want := strings.Split(strings.Trim(swap(blocks[b+2]), "\n"), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("docs/fleet.md's block\n%s\nprinted\n%s\n--- the doc shows\n%s", blocks[b], strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if ran < 10 {
		t.Fatalf("ran %d of the doc's commands; its two workers and the operator's first look run 10", ran)
	}
}
