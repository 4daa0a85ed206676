package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/internal/testfs"
	"sessdb/store"
)

// Issue 15, items 1, 2 and 7, through the CLI as a worker runs it: the job
// dir is foreign ground. These are written against the CLI alone (flags,
// files, exit statuses), so they run unchanged against any sessdb.

const ticketFile = "session.ticket"

// cliVictim promotes a transcript for another key through the CLI and
// returns its key dir and transcript bytes.
func cliVictim(t *testing.T, root string) (string, []byte) {
	t.Helper()
	job := t.TempDir()
	args := []string{"--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}
	if code, _, errs := runCLI(t, append([]string{"resolve", "--kind", "github", "--repo", "victim/repo", "--ref", "main"}, args...)...); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	data := []byte(header + `{"type":"message","id":"v1","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"the victim's work"}}` + "\n")
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), data, 0o600)
	if code, out, errs := runCLI(t, append([]string{"promote"}, args...)...); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: %s %s", out, errs)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("%d key dirs", len(entries))
	}
	return filepath.Join(root, entries[0].Name()), data
}

func resolveArgs(root, job string) []string {
	return []string{"resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/widget", "--ref", "pi/issue-1", "--job-dir", job, "--pi-version", "0.58.3"}
}

// Item 1: <job-dir>/session is a link to another key's dir. Resolve fails,
// and its cleanup must not follow the link and delete that key's transcript.
func TestCLIResolveNeverDeletesThroughASymlinkedSessionDir(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	keyDir, data := cliVictim(t, root)
	job := t.TempDir()
	os.Symlink(keyDir, filepath.Join(job, "session"))
	if code, _, _ := runCLI(t, resolveArgs(root, job)...); code != exitFault {
		t.Fatalf("resolve into a symlinked session dir exited %d, want %d", code, exitFault)
	}
	if b, err := os.ReadFile(filepath.Join(keyDir, "current.jsonl")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the other key's transcript was deleted or changed: %v", err)
	}
}

// Item 2: a hard link to another key's transcript at the staged name must
// not be truncated, and a device node there must not be opened.
func TestCLIResolveNeverTruncatesThroughAHardLink(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	keyDir, data := cliVictim(t, root)
	job := t.TempDir()
	os.Mkdir(filepath.Join(job, "session"), 0o700)
	if err := os.Link(filepath.Join(keyDir, "current.jsonl"), filepath.Join(job, "session", "current.jsonl")); err != nil {
		t.Skipf("cannot hard-link across these temp dirs: %v", err)
	}
	if code, _, errs := runCLI(t, resolveArgs(root, job)...); code != exitOK {
		t.Fatalf("resolve exited %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(keyDir, "current.jsonl")); !bytes.Equal(b, data) {
		t.Fatalf("the hard-linked transcript now holds %d bytes, want %d", len(b), len(data))
	}
}

func TestCLIResolveRefusesADeviceAtTheStagedName(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	os.Mkdir(filepath.Join(job, "session"), 0o700)
	if err := testfs.MknodNull(filepath.Join(job, "session", "current.jsonl")); err != nil {
		t.Skipf("mknod not permitted: %v", err)
	}
	code, _, errs := runCLI(t, resolveArgs(root, job)...)
	if code != exitFault || !strings.Contains(errs, "not a regular file") {
		t.Fatalf("resolve onto a device exited %d (%s), want %d naming it", code, errs, exitFault)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(job, "session", "current.jsonl"), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		t.Fatal("the device node was replaced or removed")
	}
	if _, err := os.Lstat(filepath.Join(job, ticketFile)); !os.IsNotExist(err) {
		t.Fatal("a refused resolve wrote a ticket")
	}
}

// Item 7: the ticket is read without following a link or blocking on a
// FIFO, and its contents never reach an error; a failed resolve leaves no
// earlier ticket behind.
func TestCLIPromoteRefusesAFIFOTicket(t *testing.T) {
	clearEnv(t)
	job := t.TempDir()
	syscall.Mkfifo(filepath.Join(job, ticketFile), 0o600)
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(t, "promote", "--sessions-dir", t.TempDir(), "--job-dir", job, "--pi-version", "0.58.3")
		done <- code
	}()
	select {
	case code := <-done:
		if code != exitFault {
			t.Fatalf("promote with a FIFO ticket exited %d, want %d", code, exitFault)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("promote hung on a FIFO ticket")
	}
}

func TestCLIPromoteNeverEchoesATicketsTarget(t *testing.T) {
	clearEnv(t)
	job := t.TempDir()
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:$6$SECRETHASH:19000:0:99999:7:::\n"), 0o600)
	os.Symlink(secret, filepath.Join(job, ticketFile))
	code, out, errs := runCLI(t, "promote", "--sessions-dir", t.TempDir(), "--job-dir", job, "--pi-version", "0.58.3", "--log-format", "json")
	if code != exitFault {
		t.Fatalf("promote through a symlinked ticket exited %d, want %d", code, exitFault)
	}
	if strings.Contains(out+errs, "SECRET") || strings.Contains(out+errs, "'r'") || strings.Contains(out+errs, "root:") {
		t.Fatalf("the output quotes the link's target:\n%s\n%s", out, errs)
	}
}

func TestCLIFailedResolveRemovesAnEarlierTicket(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", strings.Repeat("ab", 16), "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("first resolve: %s", errs)
	}
	staged := filepath.Join(job, "session", "current.jsonl")
	os.Remove(staged)
	os.Mkdir(staged, 0o700) // the second resolve cannot stage
	if code, _, _ := runCLI(t, resolveArgs(root, job)...); code != exitFault {
		t.Fatalf("resolve exited %d, want %d", code, exitFault)
	}
	if _, err := os.Lstat(filepath.Join(job, ticketFile)); !os.IsNotExist(err) {
		t.Fatal("the earlier resolve's ticket (another key) survived a failed resolve")
	}
}

// A --job-dir that does not exist is made, 0700 (issue 12); one whose
// parent does not exist is a usage error, one line, and nothing is made.
func TestCLIResolveMakesAMissingJobDir(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := filepath.Join(t.TempDir(), "job-1")
	if code, _, errs := runCLI(t, resolveArgs(root, job)...); code != exitOK {
		t.Fatalf("resolve into a missing job dir: exit %d, %s", code, errs)
	}
	fi, err := os.Stat(job)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("job dir: %v, mode %v; want a directory, 0700", err, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(job, ticketFile)); err != nil {
		t.Fatalf("no ticket in the made job dir: %v", err)
	}
	orphan := filepath.Join(t.TempDir(), "no-such-parent", "job-2")
	code, out, errs := runCLI(t, resolveArgs(root, orphan)...)
	if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "parent directory does not exist") {
		t.Fatalf("resolve with a missing parent: exit %d, stdout %q, stderr %q; want exit 2 and one line", code, out, errs)
	}
	if _, err := os.Stat(filepath.Dir(orphan)); !os.IsNotExist(err) {
		t.Fatalf("the missing parent was made: %v", err)
	}
}

// A refused promotion reports the staged file's size as the store saw it:
// through a session/ dir that is a link, there is no regular staged file,
// and bytes is null, not the size of a file the link leads to (which was
// stat'ed through the link).
func TestCLIPromoteReportsNoBytesThroughASymlinkedSessionDir(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	if code, _, errs := runCLI(t, resolveArgs(root, job)...); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "current.jsonl"), []byte(header), 0o600)
	os.RemoveAll(filepath.Join(job, "session"))
	os.Symlink(elsewhere, filepath.Join(job, "session"))
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitOK || !strings.Contains(out, `"reason":"not-a-regular-file"`) || !strings.Contains(out, `"bytes":null`) {
		t.Fatalf("promote through a symlinked session dir: exit %d, %s %s; want not-a-regular-file with bytes null", code, out, errs)
	}
}

// A staged file with a second name (a hard link the container made to
// some file it could see) is refused not-a-regular-file unread, as a link
// or a FIFO is: the JSON says no byte count for it (null, as json.md
// says of a staged file that is no regular file), not the size of the
// file the other name is. A staged file that was read, and refused as
// not-a-regular-file because the key's dir is no directory, still has
// its size.
func TestCLIPromoteReportsNoBytesForAHardLinkedStagedFile(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	if code, _, errs := runCLI(t, resolveArgs(root, job)...); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	staged := filepath.Join(job, "session", "current.jsonl")
	other := filepath.Join(job, "elsewhere.jsonl")
	os.WriteFile(other, []byte(header+"{\"type\":\"message\"}\n"), 0o600)
	os.Remove(staged)
	if err := os.Link(other, staged); err != nil {
		t.Skipf("cannot hard-link here: %v", err)
	}
	promote := []string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}
	code, out, errs := runCLI(t, promote...)
	var got promoteOutput
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got.Reason != "not-a-regular-file" || got.Bytes != nil || got.Run != nil {
		t.Fatalf("promote of a hard-linked staged file: exit %d, %s %s; want not-a-regular-file with bytes and run null", code, out, errs)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("the refused promotion made %d entries under the root", len(entries))
	}

	// One name again, but the key's dir a file: read, and refused.
	os.Remove(other)
	key := store.Key("github", "acme/widget", "pi/issue-1")
	os.MkdirAll(root, 0o700)
	os.WriteFile(filepath.Join(root, key), nil, 0o600)
	fi, _ := os.Stat(staged)
	code, out, errs = runCLI(t, promote...)
	got = promoteOutput{}
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got.Reason != "not-a-regular-file" || got.Bytes == nil || *got.Bytes != fi.Size() {
		t.Fatalf("promote onto a key dir that is a file: exit %d, %s %s; want not-a-regular-file with bytes %d", code, out, errs, fi.Size())
	}
}

// A job's values go into its ticket (JSON) and the key's history as text:
// one that is not valid UTF-8 came back as U+FFFD, so its job was staged
// at a path the JSON did not name, and a venue so recorded never matched
// again (venue-changed forever). Each is refused, exit 2, one line naming
// the flag with the value quoted safely, and nothing is written.
func TestJobValuesMustBeUTF8(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	key := strings.Repeat("a", 32)
	for _, flag := range []string{"job-dir", "venue", "pi-version", "job"} {
		job := filepath.Join(t.TempDir(), "j")
		args := map[string]string{"job-dir": job, "venue": "local", "pi-version": "0.58.3", "job": "1234"}
		args[flag] += "\xff\u202e"
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", args["job-dir"], "--pi-version", args["pi-version"], "--venue", args["venue"], "--job", args["job"])
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--"+flag+": ") || !strings.Contains(errs, `\xff\u202e`) || !strings.Contains(errs, "not valid UTF-8") {
			t.Errorf("resolve --%s not UTF-8: exit %d, stdout %q, stderr %q; want exit 2 and one line naming it", flag, code, out, errs)
		}
		if _, err := os.Lstat(args["job-dir"]); !os.IsNotExist(err) {
			t.Errorf("resolve --%s not UTF-8 made the job dir", flag)
		}
	}
	job := t.TempDir()
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	for _, c := range [][]string{
		{"promote", "--sessions-dir", root, "--job-dir", job + "/\xff", "--pi-version", "0.58.3"},
		{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.\xff"},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "lo\xffcal", root},
		{"dump", "--as-job", "--pi-version", "\xff", "--venue", "local", root},
	} {
		code, out, errs := runCLI(t, c...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "not valid UTF-8") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line", c, code, out, errs)
		}
	}
}

// A job's value longer than a legacy sidecar holds (4096 bytes, after its
// white space is trimmed) is refused by resolve, promote and dump
// --as-job: exit 2, one line naming the flag and the value's length, a
// short quote of it, and nothing written. Before, a 70,000-byte venue
// resolved, and its ticket was more than promote read: the run was lost.
// One at the bound, with the white space a variable leaves around it, is
// taken, resumes, and resumes again after the key is migrated to the
// legacy layout.
func TestJobValuesAreAtMostASidecarLong(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	key := strings.Repeat("a", 32)
	long := strings.Repeat("v", legacySidecarMax+1)
	for _, flag := range []string{"venue", "pi-version", "job", "model"} {
		job := filepath.Join(t.TempDir(), "j")
		args := map[string]string{"venue": "local", "pi-version": "0.58.3", "job": "1234", "model": "anthropic/x"}
		args[flag] = long
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", args["pi-version"], "--venue", args["venue"], "--job", args["job"], "--model", args["model"])
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--"+flag+": ") || !strings.Contains(errs, "(4097 bytes)") || len(errs) > 400 {
			t.Errorf("resolve --%s of 4097 bytes: exit %d, stdout %q, stderr %q; want exit 2 and one short line naming it", flag, code, out, errs)
		}
		if _, err := os.Lstat(job); !os.IsNotExist(err) {
			t.Errorf("resolve --%s of 4097 bytes made the job dir", flag)
		}
	}
	job := t.TempDir()
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	for _, c := range [][]string{
		{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", long},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", long, root},
		{"dump", "--as-job", "--pi-version", long, "--venue", "local", root},
	} {
		code, out, errs := runCLI(t, c...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "(4097 bytes)") {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 2 and one line", c[0], c[len(c)-4], code, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(root, key)); !os.IsNotExist(err) {
		t.Errorf("the refused promote made the key: %v", err)
	}

	venue := strings.Repeat("v", legacySidecarMax)
	for i := range 2 {
		job := filepath.Join(t.TempDir(), "j")
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--venue", " "+venue+"\n")
		if want := []string{`"reason":"absent"`, `"reason":"resumed"`}[i]; code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("resolve %d with a venue of 4096 bytes: exit %d, %s %s; want %s", i, code, out, errs, want)
		}
		staged := filepath.Join(job, "session", "current.jsonl")
		b, _ := os.ReadFile(staged)
		if len(b) == 0 {
			b = []byte(header)
		}
		os.WriteFile(staged, append(b, `{"type":"message","id":"m`+string(rune('1'+i))+`","parentId":null,"timestamp":"2026-11-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`+"\n"...), 0o600)
		if code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
			t.Fatalf("promote %d: exit %d, %s %s", i, code, out, errs)
		}
	}
	if code, out, errs := runCLI(t, "migrate", "--to-legacy", root); code != exitOK {
		t.Fatalf("migrate --to-legacy: exit %d, %s %s", code, out, errs)
	}
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", filepath.Join(t.TempDir(), "j"), "--pi-version", "0.58.3", "--venue", venue)
	if code != exitOK || !strings.Contains(out, `"reason":"resumed"`) {
		t.Fatalf("resolve after migrate --to-legacy: exit %d, %s %s; want resumed", code, out, errs)
	}
}

// legacySidecarMax is the legacy store's SIDECAR_MAX_BYTES: the most a
// stamp's file holds, and so the most a job's value may be.
const legacySidecarMax = 4096

// A --job-dir inside a key dir of the sessions root, or one that holds
// the root, is a usage error (exit 2, one line naming --job-dir and the
// store's directory): nothing is made or written, and a job dir beside
// the root resolves.
func TestAJobDirInOrAroundTheRootIsAUsageError(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	key := strings.Repeat("a", 32)
	if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
		t.Fatal(err)
	}
	// A job dir whose links lead past PATH_MAX (into the key dir): where it
	// leads cannot be told, and it is refused the same way.
	past := filepath.Join(testfs.PastPathMax(t, base, filepath.Join(root, key)), "job-2")
	for _, job := range []string{filepath.Join(root, key), filepath.Join(root, key, "job-1"), root, base, past} {
		before, _ := os.ReadDir(filepath.Join(root, key))
		code, out, errs := runCLI(t, resolveArgs(root, job)...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || len(errs) > 1000 || !strings.Contains(errs, "--job-dir") || !strings.Contains(errs, root) {
			t.Errorf("--job-dir %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --job-dir and the root", job, code, out, errs)
		}
		if after, _ := os.ReadDir(filepath.Join(root, key)); len(after) != len(before) {
			t.Errorf("--job-dir %s: the key dir went from %v to %v", job, before, after)
		}
		if _, err := os.Stat(filepath.Join(root, "session")); !os.IsNotExist(err) {
			t.Errorf("--job-dir %s: a staged dir in the root: %v", job, err)
		}
	}
	if code, _, errs := runCLI(t, resolveArgs(root, filepath.Join(root, "jobs-1"))...); code != exitOK {
		t.Errorf("a job dir under the root, outside every key: exit %d, %s", code, errs)
	}
}

// A sessions root whose path leads nowhere that can be told (a link loop;
// a parent the worker may not search) fails resolve's comparison of the
// job dir with the store's directory from the root's side: the line named
// --job-dir, with the usage hint, sending the operator to a job dir that
// was fine. It names the root's knob, exit 2 as before; a job dir that
// is the root still names --job-dir.
func TestAnUnresolvableRootIsNamedNotTheJobDir(t *testing.T) {
	clearEnv(t)
	tmp := t.TempDir()
	loop := filepath.Join(tmp, "loop-a")
	if err := os.Symlink(filepath.Join(tmp, "loop-b"), loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, filepath.Join(tmp, "loop-b")); err != nil {
		t.Fatal(err)
	}
	resolve := func(args ...string) (int, string) {
		code, out, errs := runCLI(t, append([]string{"resolve", "--key", strings.Repeat("b", 32), "--pi-version", "1", "--log-format", "console"}, args...)...)
		if out != "" {
			t.Errorf("%q: stdout %q", args, out)
		}
		return code, errs
	}
	for _, c := range []struct {
		env  string
		args []string
		name string
	}{
		{loop, []string{"--job-dir", filepath.Join(tmp, "job")}, "PI_SESSIONS_DIR"},
		{"", []string{"--job-dir", filepath.Join(tmp, "job"), "--sessions-dir", loop}, "--sessions-dir"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		code, errs := resolve(c.args...)
		if code != exitUsage || !strings.HasPrefix(errs, "sessdb resolve: "+c.name+": ") || !strings.Contains(errs, "sessions root") || strings.Contains(errs, "--job-dir") {
			t.Errorf("root %s %q: exit %d, %q; want exit 2, the line naming %s and the sessions root, not --job-dir", loop, c.args, code, errs, c.name)
		}
	}
	root := filepath.Join(tmp, "root")
	os.Mkdir(root, 0o700)
	t.Setenv("PI_SESSIONS_DIR", root)
	if code, errs := resolve("--job-dir", root); code != exitUsage || !strings.HasPrefix(errs, "sessdb resolve: --job-dir: ") {
		t.Errorf("a job dir that is the root: exit %d, %q; want exit 2 naming --job-dir", code, errs)
	}
}
