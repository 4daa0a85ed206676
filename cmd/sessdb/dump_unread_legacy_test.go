package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"sessdb/internal/faults"
	"sessdb/internal/sample"
	"sessdb/store/legacy"
)

// A legacy resume-chain or context file that is there but gives no value
// (its read failing, or a directory at its name) is shown by dump as
// unreadable, in the table's cell as venue's and pi-version's are and in
// the JSON's legacy_unreadable, not as a chain of 0 or no reading: an
// operator auditing the store read it as a key that never had one.
func TestDumpShowsAnUnreadableLegacyChainOrContext(t *testing.T) {
	for i, file := range []string{legacy.ResumeChainName, legacy.ContextName} {
		for _, how := range []string{"eio", "dir", "absent"} {
			t.Run(file+"/"+how, func(t *testing.T) {
				atSampleTime(t)
				root := copySample(t)
				if how != "eio" {
					p := filepath.Join(root, sample.Legacy, file)
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					if how == "dir" {
						if err := os.Mkdir(p, 0o700); err != nil {
							t.Fatal(err)
						}
					}
				}
				// An absent file is not unreadable: a chain or context
				// none, as before.
				want, wantCell, wantChain := []string{file}, "(unreadable)", any(float64(0))
				if how == "absent" {
					want, wantCell, wantChain = nil, "-", nil
				}
				arm := func() {
					if how != "eio" {
						return
					}
					n := 0
					faults.Set(func(p faults.Point) error {
						// One key's observation reads venue, pi-version,
						// resume-chain, context, in that order: fail
						// file's read, the third or the fourth.
						if p == faults.LegacySidecarRead {
							if n++; n == 3+i {
								return syscall.EIO
							}
						}
						return nil
					})
					t.Cleanup(func() { faults.Set(nil) })
				}
				arm()
				code, out, errs := runCLI(t, "dump", "--json", "--key", sample.Legacy, root)
				faults.Set(nil)
				first, _, _ := strings.Cut(out, "\n")
				var r map[string]any
				if code != exitOK || json.Unmarshal([]byte(first), &r) != nil {
					t.Fatalf("dump --json: exit %d\n%s%s", code, out, errs)
				}
				var listed []string
				if l, ok := r["legacy_unreadable"].([]any); ok {
					for _, v := range l {
						s, _ := v.(string)
						listed = append(listed, s)
					}
				}
				if !slices.Equal(listed, want) {
					t.Errorf("dump --json with %s unreadable (%s): legacy_unreadable %v (resume_chain %v, context %v); want %v", file, how, r["legacy_unreadable"], r["resume_chain"], r["context"], want)
				}
				// The other fields are as they were: what resolve reads.
				if file == legacy.ResumeChainName && r["resume_chain"] != wantChain || file == legacy.ContextName && r["context"] != nil {
					t.Errorf("dump --json (%s %s): resume_chain %v, context %v; want what the legacy reader reads (%v, null)", file, how, r["resume_chain"], r["context"], wantChain)
				}
				arm()
				code, out, errs = runCLI(t, "dump", "--wide", "--key", sample.Legacy, root)
				faults.Set(nil)
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if code != exitOK || len(lines) != 2 {
					t.Fatalf("dump --wide: exit %d\n%s%s", code, out, errs)
				}
				col := "CHAIN"
				if file == legacy.ContextName {
					col = "CONTEXT"
				}
				if got := cell(t, lines[0], lines[1], col); got != wantCell {
					t.Errorf("dump --wide with %s unreadable (%s): %s is %q, want %s\n%s", file, how, col, got, wantCell, out)
				}
			})
		}
	}
}

// The key table without --wide shows the marks dump itself writes in a
// stamp's, the chain's or the context's cell whole, as json.md says of
// them: a legacy key whose four sidecars are unreadable reads
// "(unreadable)" in PI-VERSION, VENUE, CHAIN and CONTEXT, and one a
// promotion of an unknown venue left cold reads "(pending)" in VENUE, not
// "(unreadab…", "(unread…", "(unrea…" and "(pendin…"; every line still
// fits dumpWidth.
func TestDumpTableShowsItsOwnMarksWhole(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	withMarks(t, root)
	code, out, errs := runCLI(t, "dump", root)
	if code != exitOK {
		t.Fatalf("dump: exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	rowOf := func(key string) string {
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, key+" ") {
				return l
			}
		}
		t.Fatalf("no row for %s:\n%s", key, out)
		return ""
	}
	for _, col := range []string{"PI-VERSION", "VENUE", "CHAIN", "CONTEXT"} {
		if got := cell(t, lines[0], rowOf(sample.Legacy), col); got != unreadableCell {
			t.Errorf("dump, every sidecar unreadable: %s is %q, want %s\n%s", col, got, unreadableCell, out)
		}
	}
	if got := cell(t, lines[0], rowOf(pendingKey), "VENUE"); got != legacy.PendingVenue {
		t.Errorf("dump, a venue stamped %s: VENUE is %q, want it whole\n%s", legacy.PendingVenue, got, out)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > dumpWidth {
			t.Errorf("a line of %d columns, over %d: %q", n, dumpWidth, l)
		}
	}
}

// The key table fits dumpWidth whatever its columns hold: with --verify,
// dump's own marks (each column now as wide as "(unreadable)"), a
// verdict of the job's, and a transcript of a megabyte, the columns
// before NOTE came to more than the width less NOTE's title, which is
// never cut, and every line was 161 columns. Cells are cut, right to
// left and never below their title, until NOTE's title fits.
func TestDumpTableFitsItsWidthWithItsMarks(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	damageSample(t, root)
	withMarks(t, root)
	transcript := filepath.Join(root, pendingKey, "current.jsonl")
	b, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"type":"message","id":"big","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}}` + "\n"
	if err := os.WriteFile(transcript, append(b, big...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"dump"}, {"dump", "--verify"}, {"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local"}} {
		code, out, errs := runCLI(t, append(args, root)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !strings.HasSuffix(lines[0], "  NOTE") {
			t.Errorf("%v: the title line does not end with NOTE: %q", args, lines[0])
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > dumpWidth {
				t.Errorf("%v: a line of %d columns, over %d: %q", args, n, dumpWidth, l)
			}
		}
	}
}

// pendingKey is withMarks' legacy key cold for every venue.
const pendingKey = "0123456789abcdef0123456789abcdef"

// withMarks makes the sample at root show dump's own marks: the
// sample's legacy key with its four sidecars unreadable, and pendingKey,
// a copy of it stamped with the venue a promotion of an unknown one
// leaves.
func withMarks(t *testing.T, root string) {
	t.Helper()
	// A second legacy key, cold for every venue: a copy of the sample's
	// legacy key, stamped with the venue a promotion of an unknown one
	// leaves.
	unreadable, pending := filepath.Join(root, sample.Legacy), filepath.Join(root, pendingKey)
	if err := os.Mkdir(pending, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(unreadable)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(unreadable, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == legacy.VenueName {
			b = []byte(legacy.PendingVenue)
		}
		if err := os.WriteFile(filepath.Join(pending, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The sample's own: every sidecar a directory, which gives no value.
	for _, name := range []string{legacy.PiVersionName, legacy.VenueName, legacy.ResumeChainName, legacy.ContextName} {
		p := filepath.Join(unreadable, name)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}

}

// cell is the value of the column title in row of a table whose title
// line is head (columns start where their title does).
func cell(t *testing.T, head, row, title string) string {
	t.Helper()
	at := strings.Index(head, " "+title+" ") + 1
	if at == 0 {
		t.Fatalf("no column %s in %q", title, head)
	}
	end := at + len(title)
	for end < len(head) && head[end] == ' ' {
		end++
	}
	if at > len(row) {
		return ""
	}
	return strings.TrimSpace(row[at:min(end, len(row))])
}
