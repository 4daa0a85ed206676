package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// White space around a stamp the job gives (--pi-version at resolve and
// promote, --venue and --model at resolve and dump --as-job) is a quoting
// mistake, a stray newline from a variable or an env file, never part of
// the value: the legacy reader trims it from every sidecar, so such a
// stamp could not be written to legacy files, and a whole number's flag
// ignores it the same way. It is trimmed. Stamped as given, "local\n"
// made every later resolve venue-changed, and "0.58.3 " pi-version-changed.
func TestStampsIgnoreSurroundingWhitespace(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/widget", "--ref", "pi/issue-1", "--job-dir", job,
		"--pi-version", " 0.58.3\n", "--venue", "local\r\n", "--model", "\tanthropic/claude-sonnet-4-5 ")
	var r resolveOutput
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Reason != "absent" {
		t.Fatalf("first resolve: exit %d %s %s", code, out, errs)
	}
	// The job's model, for the context bound, is the one given too.
	var ticket struct{ Model string }
	if b, err := os.ReadFile(filepath.Join(job, store.TicketName)); err != nil || json.Unmarshal(b, &ticket) != nil || ticket.Model != "anthropic/claude-sonnet-4-5" {
		t.Fatalf("the ticket's model: %+v, %v; want anthropic/claude-sonnet-4-5", ticket, err)
	}
	os.WriteFile(r.Staged, []byte(header), 0o600)
	code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3\u00a0\n", "--context-tokens", "100", "--context-window", "200000")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted {
		t.Fatalf("promote: exit %d %s %s", code, out, errs)
	}
	// The stamps are the values, as the legacy reader would read them.
	code, out, errs = runCLI(t, "dump", "--json", "--key", r.Key, root)
	var row struct {
		PiVersion *string `json:"pi_version"`
		Venue     *string `json:"venue"`
	}
	if code != exitOK || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &row) != nil ||
		row.PiVersion == nil || *row.PiVersion != "0.58.3" || row.Venue == nil || *row.Venue != "local" {
		t.Fatalf("dump: exit %d %s %s; want the stamps 0.58.3 and local", code, out, errs)
	}
	// A job stamped without the blanks resumes it, and one with them too.
	for _, stamps := range [][]string{
		{"--pi-version", "0.58.3"},
		{"--pi-version", "0.58.3\n", "--venue", " local ", "--model", "anthropic/claude-sonnet-4-5\n"},
	} {
		args := append([]string{"resolve", "--sessions-dir", root, "--key", r.Key, "--job-dir", t.TempDir()}, stamps...)
		code, out, errs = runCLI(t, args...)
		var again resolveOutput
		if code != exitOK || json.Unmarshal([]byte(out), &again) != nil || !again.Resume {
			t.Fatalf("resolve %q: exit %d %s %s; want resumed", stamps, code, out, errs)
		}
	}
	code, out, errs = runCLI(t, "dump", "--json", "--as-job", "--pi-version", " 0.58.3", "--venue", "local\n", "--key", r.Key, root)
	if code != exitOK || !strings.Contains(out, `"reason":"resumed"`) {
		t.Fatalf("dump --as-job: exit %d %s %s; want the verdict resumed", code, out, errs)
	}
	// And the key can go back to the legacy layout.
	if code, out, errs = runCLI(t, "migrate", "--to-legacy", "--dry-run", root); code != exitOK {
		t.Fatalf("migrate --to-legacy --dry-run: exit %d %s %s", code, out, errs)
	}
}

// A key an earlier sessdb stamped with white space around a stamp (it
// kept what it was given) cold-starts once after the trim, venue-changed
// or pi-version-changed, and its next promotion stamps the trimmed value,
// so the job after it resumes (docs/job.md).
func TestAKeyStampedWithWhitespaceColdStartsOnceThenResumes(t *testing.T) {
	for _, c := range []struct {
		name       string
		job        store.Job
		piVersion  string
		coldReason string
	}{
		{"venue", store.Job{PiVersion: "0.58.3", Venue: "local\n"}, "0.58.3", "venue-changed"},
		{"pi-version", store.Job{PiVersion: "0.58.3 ", Venue: "local"}, "0.58.3 ", "pi-version-changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			root := filepath.Join(t.TempDir(), "sessions")
			key := store.Key("github", "acme/widget", "pi/issue-ws")
			// What an earlier sessdb did: the stamps as given.
			s, err := store.New(root, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			old := t.TempDir()
			sess, err := s.Resolve(key, c.job, old)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(old, store.StagedDirName, store.TranscriptName), []byte(header), 0o600)
			if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: c.piVersion}); err != nil || !res.Promoted {
				t.Fatalf("the earlier promotion: %+v, %v", res, err)
			}
			// Each job spells the stamps with other blanks: only their
			// trim makes one job's stamps match the next one's.
			spellings := [][2]string{{"0.58.3\n", "local\n"}, {" 0.58.3", " local "}, {"0.58.3", "local"}}
			jobs := 0
			resolve := func() resolveOutput {
				t.Helper()
				job, sp := t.TempDir(), spellings[jobs%len(spellings)]
				jobs++
				code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", sp[0], "--venue", sp[1])
				var r resolveOutput
				if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
					t.Fatalf("resolve: exit %d %s %s", code, out, errs)
				}
				os.WriteFile(r.Staged, []byte(header), 0o600)
				code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", sp[0])
				var p promoteResult
				if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted {
					t.Fatalf("promote: exit %d %s %s", code, out, errs)
				}
				return r
			}
			if r := resolve(); r.Resume || r.Reason != c.coldReason {
				t.Fatalf("the first job after the trim: %+v; want the one cold start, %s", r, c.coldReason)
			}
			for i := range 2 {
				if r := resolve(); !r.Resume {
					t.Fatalf("job %d after the restamping promotion: %+v; want resumed", i+2, r)
				}
			}
		})
	}
}
