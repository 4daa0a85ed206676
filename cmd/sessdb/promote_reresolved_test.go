package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// The CLI's promote reads the job dir's ticket, then promotes. A resolve
// of another key into the same job dir between the two (a worker that
// gave up on a slow promote and used the dir again) must not make the
// promote take that resolve's staged file for its own ticket's run: the
// store reads the ticket again under the staged dir's lock
// (PromoteRequest.TicketFromJobDir, which promote sets), and the promote
// is promote-failed, key a left without key b's conversation.
func TestPromoteDoesNotTakeTheRunOfAResolveBetweenItsTicketAndItsPromotion(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	resolve := func(ref, job string) resolveOutput {
		t.Helper()
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/busy", "--ref", ref, "--job-dir", job, "--pi-version", "0.58.3")
		var r resolveOutput
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("resolve %s: exit %d, %s %s", ref, code, out, errs)
		}
		return r
	}
	promote := func(job string) promoteResult {
		t.Helper()
		code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
		var p promoteResult
		if code != exitOK || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("promote in %s: exit %d, %s %s", job, code, out, errs)
		}
		return p
	}
	bsRun := header + `{"type":"message","marker":"b's conversation"}` + "\n"
	first := t.TempDir()
	r := resolve("b", first)
	if err := os.WriteFile(r.Staged, []byte(bsRun), 0o600); err != nil {
		t.Fatal(err)
	}
	if p := promote(first); !p.Promoted {
		t.Fatalf("b's first promote: %+v", p)
	}

	job := t.TempDir()
	r = resolve("a", job)
	if r.Resume {
		t.Fatalf("key a resolved %s; want a cold start", r.Reason)
	}
	if err := os.WriteFile(r.Staged, []byte(header+`{"type":"message","marker":"a's run"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := readTicket
	t.Cleanup(func() { readTicket = read })
	readTicket = func(dir string) (store.Session, error) {
		sess, err := read(dir)
		resolve("b", job) // b's conversation is now the job dir's staged file
		return sess, err
	}
	p := promote(job)
	readTicket = read
	if p.Promoted || p.Reason != "promote-failed" {
		t.Errorf("a's promote after b was resolved into its job dir: %+v; want promote-failed", p)
	}
	if after := resolve("a", t.TempDir()); after.Resume {
		b, _ := os.ReadFile(after.Staged)
		t.Errorf("key a resumes %q; want nothing (never b's conversation)", strings.TrimPrefix(string(b), header))
	}
}

// A ticket file edited between the CLI's read and the store's read again
// under the staged dir's lock, so that only its key changes, is refused by
// the store before anything is tried (store.ErrBadTicket): promote has no
// outcome to print, and reports a fault (exit 1, nothing on stdout), as it
// does for a ticket it cannot read; never an answer with an empty reason
// that no worker's code knows, and exit 0.
func TestPromoteOfATicketWhoseKeyChangedUnderItsReadIsAFault(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/edited", "--ref", "a", "--job-dir", job, "--pi-version", "0.58.3")
	var r resolveOutput
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("resolve: exit %d, %s %s", code, out, errs)
	}
	if err := os.WriteFile(r.Staged, []byte(header+`{"type":"message","marker":"a's run"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := store.Key("github", "acme/edited", "b")
	read := readTicket
	t.Cleanup(func() { readTicket = read })
	readTicket = func(dir string) (store.Session, error) {
		sess, err := read(dir)
		name := filepath.Join(dir, store.TicketName)
		b, rerr := os.ReadFile(name)
		if rerr != nil {
			t.Fatal(rerr)
		}
		edited := strings.Replace(string(b), sess.Key, other, 1)
		if edited == string(b) {
			t.Fatalf("the ticket %s does not name its key %s", b, sess.Key)
		}
		if werr := os.WriteFile(name, []byte(edited), 0o600); werr != nil {
			t.Fatal(werr)
		}
		return sess, err
	}
	code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
	readTicket = read
	if code != exitFault || out != "" {
		t.Errorf("promote of a ticket whose key changed under its read: exit %d, stdout %q; want exit %d and nothing on stdout", code, out, exitFault)
	}
	if !strings.Contains(errs, "not a valid ticket") || !strings.Contains(errs, r.Key) {
		t.Errorf("stderr %q; want the store's refusal (not a valid ticket), naming key %s", errs, r.Key)
	}
	for _, key := range []string{r.Key, other} {
		if _, err := os.Lstat(filepath.Join(root, key, "current.jsonl")); !os.IsNotExist(err) {
			t.Errorf("key %s has a transcript after a refused promote (%v); want nothing promoted", key, err)
		}
	}
}
