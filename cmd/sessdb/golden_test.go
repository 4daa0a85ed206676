package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sessdb/internal/sample"
	"sessdb/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/sessdb -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is meant):\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// randomTemp matches the random part of a promotion's temp name, the one
// thing in a check report that changes from run to run.
var randomTemp = regexp.MustCompile(`\.current\.jsonl\.tmp-[0-9a-f]{16}`)

// The table and JSON of dump, check, reap and migrate on the shipped sample
// (a copy with fixed mtimes, judged an hour after the sample's clock), and
// of check, dump and reap before and after --repair on a damaged copy.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"dump.txt", []string{"dump"}, exitOK},
		{"dump-wide.txt", []string{"dump", "--wide"}, exitOK},
		{"dump-history.txt", []string{"dump", "--history", "64"}, exitOK},
		{"dump.jsonl", []string{"dump", "--json"}, exitOK},
		{"dump-history.jsonl", []string{"dump", "--json", "--verify", "--history", "3"}, exitOK},
		{"dump-as-job.txt", []string{"dump", "--verify", "--max-resume-chain", "3", "--as-job", "--pi-version", "0.58.3", "--venue", "local"}, exitOK},
		{"check.txt", []string{"check"}, exitOK},
		{"check.jsonl", []string{"check", "--json"}, exitOK},
		{"reap-dry-run.txt", []string{"reap", "--dry-run", "--ttl-days", "14"}, exitOK},
		{"reap-dry-run.jsonl", []string{"reap", "--dry-run", "--json"}, exitOK},
		{"migrate-dry-run.txt", []string{"migrate", "--dry-run"}, exitOK},
		{"migrate.jsonl", []string{"migrate", "--json"}, exitOK},
		{"migrate-to-legacy.txt", []string{"migrate", "--to-legacy"}, exitOK},
		{"damaged-check.txt", []string{"check"}, exitIssues},
		{"damaged-check.jsonl", []string{"check", "--json"}, exitIssues},
		{"damaged-check-repair.txt", []string{"check", "--repair"}, exitIssues},
		{"damaged-dump.txt", []string{"dump", "--verify"}, exitOK},
		{"damaged-dump-wide.txt", []string{"dump", "--verify", "--wide"}, exitOK},
		{"damaged-reap-dry-run.txt", []string{"reap", "--dry-run"}, exitFault},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			atSampleTime(t)
			root := copySample(t)
			if strings.HasPrefix(c.name, "damaged-") {
				damageSample(t, root)
			}
			code, out, errs := runCLI(t, append(c.args, root)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			out = randomTemp.ReplaceAllString(out, ".current.jsonl.tmp-RANDOM")
			golden(t, c.name, elapsed.ReplaceAllString(out, "${1}ELAPSED"))
		})
	}
}

// elapsed matches how long a migration took, in its text and its JSON.
var elapsed = regexp.MustCompile(`( in |"elapsed_seconds":)[0-9.e-]+`)

// resolve and promote through the job contract on the sample, and engage
// replay on the shared fixture: their JSON and tables.
func TestGoldenJobsAndReplay(t *testing.T) {
	atSampleTime(t)
	var b strings.Builder
	for _, o := range jobScenario(t, copySample(t)) {
		fmt.Fprintf(&b, "# %s\n%s", o.what, o.out)
	}
	golden(t, "jobs.jsonl", b.String())

	p := engageFixturePath()
	if p == "" {
		t.Skip("the shared pi fixtures are absent")
	}
	for name, args := range map[string][]string{
		"engage-replay.txt":            {p},
		"engage-replay.jsonl":          {"--json", p},
		"engage-replay-modelled.txt":   {"--pruned-ratio", "0.7", "--cache-read-price", "0.30", "--cache-write-price", "3.75", p},
		"engage-replay-modelled.jsonl": {p, "--json", "--pruned-ratio", "0.7", "--cache-read-price", "0.30", "--cache-write-price", "3.75"},
	} {
		code, out, errs := runCLI(t, append([]string{"engage", "replay"}, args...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d %s", name, code, errs)
		}
		golden(t, name, out)
	}
}

// damageSample makes the damaged copy that the README shows: the
// expired key's meta.db emptied, a promotion of the resumable key stopped
// between its commit and its rename, the long-chain key's transcript edited
// in place and a stray temp left beside it, a key dir that is a link.
func damageSample(t *testing.T, root string) {
	t.Helper()
	if err := os.Truncate(filepath.Join(root, sample.Expired, "meta.db"), 0); err != nil {
		t.Fatal(err)
	}
	pendingPromotion(t, root, sample.Resumable)
	p := filepath.Join(root, sample.LongChain, "current.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "feedback 5", "feedback 6", 1)), 0o600)
	stray := filepath.Join(root, sample.LongChain, ".current.jsonl.tmp-00c0ffee00c0ffee")
	os.WriteFile(stray, []byte("half a transcript"), 0o600)
	then := sample.Time.Add(-3 * time.Hour)
	os.Chtimes(stray, then, then)
	os.Symlink("/srv/elsewhere", filepath.Join(root, store.Key("github", "acme/widget", "pi/issue-99")))
}
