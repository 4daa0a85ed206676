package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A path is taken as the system takes it: a ".." after a link is the
// parent of the link's target, not the link's own directory (rev-cli).

// resolve's "staged" names the file it staged: <job-dir>/session/current.jsonl
// with the job dir as given. Cleaned, "jobs/link/../1234" named
// jobs/1234/session/current.jsonl, another job's staged file, while
// resolve had staged the job's own under the link's target's parent.
func TestStagedNamesTheFileResolveStaged(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	mustMkdir(t, root, filepath.Join(base, "elsewhere", "deep"), filepath.Join(base, "jobs"))
	if err := os.Symlink(filepath.Join(base, "elsewhere", "deep"), filepath.Join(base, "jobs", "link")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "jobs", "1234", "session")
	mustMkdir(t, other)
	if err := os.WriteFile(filepath.Join(other, "current.jsonl"), []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}

	job := filepath.Join(base, "jobs", "link") + "/../1234"
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "0123456789abcdef0123456789abcdef",
		"--job-dir", job, "--pi-version", "0.58.3")
	if code != exitOK {
		t.Fatalf("resolve exited %d: %s", code, errs)
	}
	var res struct{ Staged string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	staged, err := os.Stat(filepath.Join(base, "elsewhere", "1234", "session", "current.jsonl"))
	if err != nil {
		t.Fatalf("nothing staged where the system takes the job dir: %v", err)
	}
	if named, err := os.Stat(res.Staged); err != nil || !os.SameFile(named, staged) {
		t.Errorf("resolve's \"staged\" is %s, not the file it staged (%v)", res.Staged, err)
	}
	if data, err := os.ReadFile(filepath.Join(other, "current.jsonl")); err != nil || string(data) != header {
		t.Errorf("the other job's staged file: %q, %v; want it untouched", data, err)
	}
}

// A job dir whose parent does not exist, as the system takes the parent,
// is a usage error (exit 2) that makes nothing: "missing/../jobs/new",
// cleaned, is jobs/new, whose parent exists, and the mkdir failed as a
// fault (exit 1).
func TestAJobDirsParentIsTheOneTheSystemReaches(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	mustMkdir(t, root, filepath.Join(base, "jobs"))
	job := filepath.Join(base, "missing") + "/../jobs/new"
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "0123456789abcdef0123456789abcdef",
		"--job-dir", job, "--pi-version", "0.58.3")
	if code != exitUsage || out != "" || !strings.Contains(errs, "its parent directory does not exist") {
		t.Errorf("resolve of %s: exit %d, stdout %q, stderr %s; want exit 2 naming the missing parent", job, code, out, errs)
	}
	if _, err := os.Lstat(filepath.Join(base, "jobs", "new")); !os.IsNotExist(err) {
		t.Errorf("jobs/new: %v; want nothing made", err)
	}
}

// A sessions root that leads, through a link, to a name that is not UTF-8
// is refused at resolve, exit 2, before the job runs: the ticket names the
// root as text (U+FFFD for the byte), and every promote of the job then
// exited 2, "another sessions root", its run lost.
func TestARootThatLeadsToANameNotUTF8IsRefusedAtResolve(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	bad := filepath.Join(base, "bad\xffdir")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Skipf("this file system refuses a name that is not UTF-8: %v", err)
	}
	mustMkdir(t, filepath.Join(bad, "sessions"))
	link := filepath.Join(base, "sessions")
	if err := os.Symlink(filepath.Join(bad, "sessions"), link); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(base, "job")
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", link, "--key", "0123456789abcdef0123456789abcdef",
		"--job-dir", job, "--pi-version", "0.58.3")
	if code != exitUsage || out != "" || !strings.Contains(errs, "not valid UTF-8") {
		t.Errorf("resolve through a link to a root not UTF-8: exit %d, stdout %q, stderr %s; want exit 2 saying so", code, out, errs)
	}
	if _, err := os.Lstat(job); !os.IsNotExist(err) {
		t.Errorf("the job dir: %v; want nothing made", err)
	}
}

func mustMkdir(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// engage replay's --svg chart is written through a temp in the directory
// the system takes the chart's parent for: cleaned, base/link/../chart.svg
// put its temp in base, and the rename into the link's target's parent,
// on another file system here, failed (EXDEV).
func TestAChartBehindALinkAndDotDotIsWrittenWhereTheSystemTakesIt(t *testing.T) {
	base := t.TempDir()
	other, err := os.MkdirTemp("/dev/shm", "sessdb-chart-")
	if err != nil {
		t.Skipf("no second file system to write to: %v", err)
	}
	defer os.RemoveAll(other)
	if a, b := devOf(t, base), devOf(t, other); a == b {
		t.Skipf("%s and %s are one file system: a temp in the wrong one would be renamed without an error", base, other)
	}
	mustMkdir(t, filepath.Join(other, "deep"))
	if err := os.Symlink(filepath.Join(other, "deep"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, "link") + "/../chart.svg"
	err = writeChart(path, func(w io.Writer) error { _, err := io.WriteString(w, "<svg/>"); return err }, filepath.Join(base, "session.jsonl"))
	if err != nil {
		t.Fatalf("writeChart(%s): %v", path, err)
	}
	if data, err := os.ReadFile(filepath.Join(other, "chart.svg")); err != nil || string(data) != "<svg/>" {
		t.Errorf("the chart where the system takes %s: %q, %v", path, data, err)
	}
	if names, _ := os.ReadDir(base); len(names) != 1 {
		t.Errorf("%s holds %d names, want only the link: a temp or a chart left there", base, len(names))
	}
}

func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Dev)
}

// resolve's "staged" is the job dir as given with its trailing slashes
// alone dropped by the join, as docs/json.md says: "jobs/1/" gives
// jobs/1/session/current.jsonl, as a worker's os.path.join or path.join
// gives it, never jobs/1//session/…; a ".." in it is kept. (The doc said
// "as given", which a worker comparing strings took for the slash kept.)
func TestStagedDropsOnlyTheJobDirsTrailingSlashes(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	mustMkdir(t, root, filepath.Join(base, "jobs"))
	for given, want := range map[string]string{
		filepath.Join(base, "jobs", "1") + "/":      filepath.Join(base, "jobs", "1") + "/session/current.jsonl",
		filepath.Join(base, "jobs", "2") + "//":     filepath.Join(base, "jobs", "2") + "/session/current.jsonl",
		filepath.Join(base, "jobs", "x") + "/../3/": filepath.Join(base, "jobs", "x") + "/../3/session/current.jsonl",
	} {
		if strings.Contains(given, "/x/") {
			mustMkdir(t, filepath.Join(base, "jobs", "x"))
		}
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "0123456789abcdef0123456789abcdef",
			"--job-dir", given, "--pi-version", "0.58.3")
		if code != exitOK {
			t.Fatalf("resolve --job-dir %s exited %d: %s", given, code, errs)
		}
		var res struct{ Staged string }
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if res.Staged != want {
			t.Errorf("--job-dir %s: staged %q; want %q", given, res.Staged, want)
		}
		if _, err := os.Stat(res.Staged); err != nil {
			t.Errorf("--job-dir %s: staged names no file: %v", given, err)
		}
	}
}
