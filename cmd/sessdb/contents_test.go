package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dump lists what is known about each transcript (its size, its header's
// id, version and timestamp) and never its contents (issue 2): a
// transcript is the most PII-bearing file a host keeps, and dump's output
// goes to terminals, logs and tickets. check and stats read the same files
// and make the same promise. Every byte of a transcript but those three
// header fields carries the marker here: the body, the header's other
// fields, a torn tail, a first line that is not JSON, a header whose type
// is not a session, and a transcript edited out of band (which --verify
// and check read whole).
func TestWalksNeverPrintTranscriptContents(t *testing.T) {
	clearEnv(t)
	const mark = "MARK-7f3c"
	root := filepath.Join(t.TempDir(), "sessions")
	head := `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/` + mark + `-cwd"}` + "\n"
	body := `{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-11-01T12:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + mark + `-body"}],"timestamp":1}}` + "\n"
	promote := func(key, staged string) {
		t.Helper()
		job := t.TempDir()
		if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--job", "j"); code != exitOK {
			t.Fatalf("resolve exit %d: %s", code, errs)
		}
		if err := os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(staged), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
			t.Fatalf("promote exit %d: %s%s", code, out, errs)
		}
	}
	// A db key whose last line was torn, and one edited out of band since.
	promote("11111111111111111111111111111111", head+body+`{"type":"message","id":"`+mark+`-torn`)
	edited := "22222222222222222222222222222222"
	promote(edited, head+body)
	if err := os.WriteFile(filepath.Join(root, edited, "current.jsonl"), []byte(head+body+body), 0o600); err != nil {
		t.Fatal(err)
	}
	// Legacy keys: a first line that is not JSON, and a header of another
	// type whose fields are strings.
	for key, data := range map[string]string{
		"33333333333333333333333333333333": mark + "-line1 is not JSON\n" + body,
		"44444444444444444444444444444444": `{"type":"` + mark + `-type","version":"` + mark + `-version","id":7,"cwd":"` + mark + `"}` + "\n" + body,
	} {
		dir := filepath.Join(root, key)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"dump", "--verify", "--wide", "--as-job", "--pi-version", "0.58.3", "--venue", "local", "--max-age-days", "1"},
		{"dump", "--history", "64"}, {"dump", "--json", "--verify", "--history", "64"},
		{"check"}, {"stats", "--json"}, {"stats", "--prometheus"},
	} {
		_, out, errs := runCLI(t, append(args, root)...)
		if out == "" {
			t.Errorf("%q printed nothing", args)
		}
		if strings.Contains(out+errs, "MARK") {
			t.Errorf("%q printed a transcript's contents:\n%s%s", args, out, errs)
		}
	}
}
