package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A job's commands refuse the filesystem root as the sessions root (or a
// fleet's transcripts dir), however it is spelled, as every walk does:
// exit 2, one line naming the variable, nothing made. resolve was a cold
// start there, exit 0, and its promote made the key's dir in "/"
// ("$STATE/" with STATE unset), a key no dump, check or reap could reach,
// so no TTL ever removed it.
func TestAJobRefusesTheFilesystemRootAsItsStore(t *testing.T) {
	key := "5e55d0b0f1f7e5ab0de1e7e5d0c0ffee"
	if _, err := os.Lstat("/" + key); err == nil {
		t.Skipf("/%s exists", key)
	}
	link := filepath.Join(t.TempDir(), "to-root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"/", "/.", "//", link} {
		clearEnv(t)
		t.Setenv("PI_SESSIONS_DIR", root)
		job := filepath.Join(t.TempDir(), "job")
		code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3")
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "PI_SESSIONS_DIR: the sessions root "+strconv.Quote(root)+" is the filesystem root") {
			t.Errorf("resolve on %q: exit %d, stdout %q, stderr %q; want exit 2 naming PI_SESSIONS_DIR and the root", root, code, out, errs)
		}
		if _, err := os.Lstat(job); err == nil {
			t.Errorf("resolve on %q made the job dir", root)
		}
		// A promote of a ticket issued there (by an earlier sessdb), its
		// staged file empty: refused before anything is read.
		if err := os.MkdirAll(filepath.Join(job, "session"), 0o700); err != nil {
			t.Fatal(err)
		}
		ticket := `{"ticket":"0123456789abcdef0123456789abcdef","root":"/","key":"` + key + `","resume":false,"reason":"absent","bytes":0,"crc32c":"00000000","base":{},"venue":"local","job_dir":"` + job + `"}` + "\n"
		if err := os.WriteFile(filepath.Join(job, "session.ticket"), []byte(ticket), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(job, "session", "current.jsonl"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
		if code != exitUsage || out != "" || !strings.Contains(errs, "--sessions-dir: the sessions root "+strconv.Quote(root)+" is the filesystem root") {
			t.Errorf("promote on %q: exit %d, stdout %q, stderr %q; want exit 2 naming --sessions-dir and the root", root, code, out, errs)
		}
	}
	if _, err := os.Lstat("/" + key); err == nil {
		os.RemoveAll("/" + key)
		t.Errorf("a key dir was made in /")
	}
	// A fleet's transcripts dir: refused before etcd is asked (none
	// listens here; it was a store-unavailable cold start, exit 0).
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:23851")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "/")
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "50ms")
	code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3")
	if code != exitUsage || out != "" || !strings.Contains(errs, `PI_SESSIONS_TRANSCRIPTS_DIR: the transcripts dir "/" is the filesystem root`) {
		t.Errorf("resolve on a fleet whose transcripts dir is /: exit %d, stdout %q, stderr %q; want exit 2 naming PI_SESSIONS_TRANSCRIPTS_DIR", code, out, errs)
	}
	// A root below "/" is a root like any other.
	clearEnv(t)
	t.Setenv("PI_SESSIONS_DIR", filepath.Join(t.TempDir(), "sessions"))
	if code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"reason":"absent"`) {
		t.Errorf("resolve on a root below /: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
