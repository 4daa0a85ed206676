package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ticket's job_dir is compared with the job dir it is read from however
// each is spelled: relative from the working directory (a sessdb from
// before 44b9c02 wrote a relative --job-dir as given), through "./", or
// through a link. One that names another directory that is there is
// refused, with words that quote nothing of the file; so is one with no
// job_dir, which no resolve writes. Before, each was read, its job_dir
// replaced by the dir it was read from.
func TestATicketIsReadOnlyFromTheJobDirItNames(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	for _, d := range []string{"job", "other"} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("job", "link"); err != nil {
		t.Fatal(err)
	}
	// Names that lead to no directory: a file, a path through a file
	// (ENOTDIR), a link to itself (ELOOP).
	if err := os.WriteFile("file", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", "loop"); err != nil {
		t.Fatal(err)
	}
	seed := strings.TrimSpace(strings.ReplaceAll(string(ticketSeeds()[1]), ticketRootMark, "/r"))
	write := func(dir, jobDir string) {
		t.Helper()
		b := strings.Replace(seed, `"job_dir":"/run/jobs/8"`, `"job_dir":`+jobDir, 1)
		if b == seed {
			t.Fatal("no job_dir in the seed")
		}
		if err := os.WriteFile(filepath.Join(dir, TicketName), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(base, "job")
	for _, c := range []struct{ named, read string }{
		{`"` + abs + `"`, "job"},
		{`"` + abs + `"`, "./job"},
		{`"` + abs + `"`, filepath.Join(base, "link")},
		{`"job"`, "job"},
		{`"job"`, abs},
		{`"./link/"`, abs},
		{`"` + base + `/./job"`, "job"},
		{`"` + filepath.Join(base, "gone") + `"`, "job"},
		{`"gone"`, "job"},
		{`"file"`, "job"},
		{`"` + filepath.Join(base, "file", "job") + `"`, "job"},
		{`"loop"`, "job"},
		{`"` + filepath.Join(base, "loop", "job") + `"`, "job"},
		// A name longer than any a directory has (ENAMETOOLONG).
		{`"` + filepath.Join(base, strings.Repeat("n", 300)) + `"`, "job"},
	} {
		write("job", c.named)
		if sess, err := ReadTicket(c.read); err != nil || sess.JobDir != c.read {
			t.Errorf("job_dir %s read from %s = %+v, %v; want read", c.named, c.read, sess, err)
		}
	}
	const another = "job_dir names another directory, which is there (the ticket was copied from it, or moved from it and its name used again since: a ticket promotes only the run staged beside it in the job dir its resolve made)"
	for _, c := range []struct{ named, read, want string }{
		{`"` + filepath.Join(base, "other") + `"`, "job", another},
		{`"other"`, abs, another},
		{`"` + base + `"`, "job", another},
		{`""`, "job", "no job_dir (every resolve writes the one it staged the run in)"},
	} {
		write("job", c.named)
		sess, err := ReadTicket(c.read)
		want := "read ticket " + filepath.Join(c.read, TicketName) + ": not a valid ticket: " + c.want
		if !errors.Is(err, ErrBadTicket) || err.Error() != want {
			t.Errorf("job_dir %s read from %s = %+v, %v\nwant %s", c.named, c.read, sess, err, want)
		}
	}
	// No job_dir at all.
	if err := os.WriteFile(filepath.Join("job", TicketName), []byte(strings.Replace(seed, `,"job_dir":"/run/jobs/8"`, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket("job"); !errors.Is(err, ErrBadTicket) || !strings.Contains(err.Error(), ": no job_dir") {
		t.Errorf("a ticket with no job_dir = %v, want refused", err)
	}
}
