package main

import (
	"fmt"
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

// docs/fleet.md's move of a sessions root into a fleet and back runs as
// the doc shows it: each sessdb line of its block, in order, on a copy of
// the sample (its legacy key too, which the block's first line moves into
// meta.db) for /var/lib/pi/sessions, against a fleet on one member, exits
// 0; the line the doc runs under `env -i PATH="$PATH"` runs with no fleet
// setting, as that gives it. Then the fleet holds every key of the root
// ("exit 0: every key is in the fleet"), each with the transcript the key
// dir holds, and the way back into the old root finds each there already.
func TestDocFleetMoveBlock(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedtest.ModuleRoot(), "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	i := strings.Index(doc, "\n## Moving a sessions root into a fleet, and back\n")
	if i < 0 {
		t.Fatal(`docs/fleet.md has no "Moving a sessions root into a fleet, and back"`)
	}
	body := doc[i:]
	start := strings.Index(body, "\n```sh\n")
	if start < 0 {
		t.Fatal("docs/fleet.md's move has no sh block")
	}
	body = body[start+len("\n```sh\n"):]
	block := body[:strings.Index(body, "\n```")]

	root := copySample(t)
	startFleet(t)
	fleetEnv := map[string]string{}
	for _, name := range []string{"PI_SESSIONS_ETCD_ENDPOINTS", "PI_SESSIONS_TRANSCRIPTS_DIR", "PI_SESSIONS_ETCD_PREFIX"} {
		fleetEnv[name] = os.Getenv(name)
	}
	setFleet := func(on bool) {
		for name, v := range fleetEnv {
			if !on {
				v = ""
			}
			t.Setenv(name, v)
		}
	}
	const envI = `env -i PATH="$PATH" `
	var ran []string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		bare := strings.HasPrefix(line, envI)
		fields := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(line, envI), "/var/lib/pi/sessions", root))
		if fields[0] != "sessdb" {
			t.Fatalf("docs/fleet.md's move runs %q, which this test does not know", line)
		}
		setFleet(!bare)
		code, out, errs := runCLI(t, fields[1:]...)
		if code != exitOK {
			t.Errorf("docs/fleet.md: %s: exit %d, want 0\n%s%s", line, code, out, errs)
		}
		ran = append(ran, line)
	}
	if len(ran) != 4 {
		t.Fatalf("ran %d sessdb lines of docs/fleet.md's move (%q); the block has 4: migrate, its dry run into the fleet, the move, the way back", len(ran), ran)
	}
	setFleet(true)
	code, out, errs := runCLI(t, "dump", "--json", "--verify")
	if code != exitOK {
		t.Fatalf("dump of the fleet after the move: exit %d\n%s%s", code, out, errs)
	}
	keys, _ := filepath.Glob(filepath.Join(root, "[0-9a-f]*"))
	if len(keys) != 5 {
		t.Fatalf("the sample copy holds %d key dirs; want its 5", len(keys))
	}
	for _, dir := range keys {
		want, err := os.ReadFile(filepath.Join(dir, "current.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		key := filepath.Base(dir)
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, `"key":"`+key+`"`) {
				line = l
			}
		}
		if !strings.Contains(line, `"layout":"etcd"`) || !strings.Contains(line, fmt.Sprintf(`"bytes":%d,`, len(want))) || !strings.Contains(line, `"result":"ok"`) {
			t.Errorf("after docs/fleet.md's move the fleet holds key %s as %q; want its %d bytes, verified", key, line, len(want))
		}
	}
}
