package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sessdb/internal/sharedtest"
)

// docs/operations.md damages a copy of the sample with shell commands and
// shows what check and check --repair print for it. TestDocCommands runs
// no command that writes, so this test makes the same damage (each
// command of the doc's block, done here in Go) and compares both outputs
// with the doc's, the moved-aside files' UTC time masked.
func TestDocDamagedCopy(t *testing.T) {
	atSampleTime(t)
	src, err := os.ReadFile(filepath.Join(sharedtest.ModuleRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	// The damage the doc's block makes, command by command; an edit of
	// the block fails here until the test makes the same damage.
	for _, cmd := range []string{
		"cp -a testdata/sessions /tmp/damaged && cd /tmp/damaged",
		": > 55c5b4543d2fe748d576d4ed795b9167/meta.db ",
		"dd if=/dev/zero of=9ddb56ddcfac930962d0f4d375d2fd07/meta.db bs=1024 count=1 conv=notrunc ",
		"sed -i 's/feedback 5/feedback 6/' 4668107cac2e99b44415c5606b32ef14/current.jsonl ",
		`echo '{"type":"session"' > 4668107cac2e99b44415c5606b32ef14/.current.jsonl.tmp-5f1e0c3a9b2d4e67`,
		"touch -d '3 hours ago' 4668107cac2e99b44415c5606b32ef14/.current.jsonl.tmp-5f1e0c3a9b2d4e67 ",
		"ln -s /srv/elsewhere 89ca26cbccb8bfa51c28b0de593c7289 ",
	} {
		if !strings.Contains(doc, "\n"+cmd) {
			t.Fatalf("docs/operations.md no longer damages its copy with %q: make this test's damage the doc's", cmd)
		}
	}
	clearEnv(t)
	root := copySample(t)
	at := func(p string) string { return filepath.Join(root, p) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Truncate(at("55c5b4543d2fe748d576d4ed795b9167/meta.db"), 0))
	f, err := os.OpenFile(at("9ddb56ddcfac930962d0f4d375d2fd07/meta.db"), os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteAt(make([]byte, 1024), 0)
	must(err)
	must(f.Close())
	tp := at("4668107cac2e99b44415c5606b32ef14/current.jsonl")
	b, err := os.ReadFile(tp)
	must(err)
	lines := strings.SplitAfter(string(b), "\n")
	for i := range lines {
		lines[i] = strings.Replace(lines[i], "feedback 5", "feedback 6", 1)
	}
	must(os.WriteFile(tp, []byte(strings.Join(lines, "")), 0o600))
	tmp := at("4668107cac2e99b44415c5606b32ef14/.current.jsonl.tmp-5f1e0c3a9b2d4e67")
	must(os.WriteFile(tmp, []byte("{\"type\":\"session\"\n"), 0o600))
	then := clock().Add(-3 * time.Hour) // the doc's touch -d '3 hours ago', on the sample's clock
	must(os.Chtimes(tmp, then, then))
	must(os.Symlink("/srv/elsewhere", at("89ca26cbccb8bfa51c28b0de593c7289")))

	aside := regexp.MustCompile(`meta\.db\.damaged-\d{8}T\d{6}Z`)
	for _, c := range []struct {
		intro string
		args  []string
	}{
		{"`sessdb check /tmp/damaged` (exit 3)", []string{"check", root}},
		{"`sessdb check --repair /tmp/damaged` (exit 3", []string{"check", "--repair", root}},
	} {
		i := strings.Index(doc, "\n"+c.intro)
		if i < 0 {
			t.Fatalf("docs/operations.md no longer introduces %s", c.intro)
		}
		open := strings.Index(doc[i:], "\n```\n")
		if open < 0 {
			t.Fatalf("no block after %s", c.intro)
		}
		body := doc[i+open+len("\n```\n"):]
		want := body[:strings.Index(body, "```\n")]
		code, out, errs := runCLI(t, c.args...)
		if code != exitIssues {
			t.Errorf("%s: exit %d, the doc says 3\n%s", c.intro, code, errs)
		}
		if got, want := aside.ReplaceAllString(out, "meta.db.damaged-TIME"), aside.ReplaceAllString(want, "meta.db.damaged-TIME"); got != want {
			t.Errorf("%s: the output differs from the doc's:\n%s\n--- the doc's\n%s", c.intro, got, want)
		}
	}
}
