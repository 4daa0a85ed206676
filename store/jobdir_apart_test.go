package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/testfs"
)

// A job dir that is the sessions root, lies inside one of its keys, or
// holds the root is refused before anything is made, whatever links lead
// there: the worker mounts <job-dir>/session into the job's container and
// removes the job dir after the job. Before, each resolved: the root
// named "session" under a job dir was handed to the container whole, a
// key dir got a session/ dir and a ticket (and reap kept that key for
// ever), and a worker's clean-up of the job dir removed the store.
func TestAJobDirThatIsInOrHoldsTheStoreIsRefused(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	s, _, _ := newTestStoreAt(t, root, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	key := filepath.Join(root, testKey)
	other := strings.Repeat("f", 32) // a key with no dir yet
	mustSymlink := func(target, name string) string {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	toKey := mustSymlink(key, filepath.Join(base, "to-key"))
	toRoot := mustSymlink(root, filepath.Join(base, "to-root"))
	if err := os.MkdirAll(filepath.Join(base, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(key, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A root named "session" under a job dir is that job dir's staged dir.
	holder := filepath.Join(base, "holder")
	if err := os.Mkdir(holder, 0o700); err != nil {
		t.Fatal(err)
	}
	sessionRoot := filepath.Join(holder, StagedDirName)
	s2, _, _ := newTestStoreAt(t, sessionRoot, gates.Bounds{})
	runJob(t, s2, testKey, localJob(), PromoteRequest{}, "a")
	dots := filepath.Join(base, "dots")
	s3, _, _ := newTestStoreAt(t, filepath.Join(dots, "..sessions"), gates.Bounds{})
	runJob(t, s3, testKey, localJob(), PromoteRequest{}, "a")

	for _, c := range []struct {
		name   string
		s      *Store
		jobDir string
	}{
		{"the root", s, root},
		{"the root through a link", s, toRoot},
		{"the root, written with a trailing slash and dots", s, root + "/./"},
		{"a key dir", s, key},
		{"a key dir through a link", s, toKey},
		{"a new dir in a key dir", s, filepath.Join(key, "job")},
		{"a new dir in a key dir reached through a link to the root", s, filepath.Join(toRoot, testKey, "job")},
		{"a key's name with no dir yet", s, filepath.Join(root, other)},
		{"a dir a reap moved aside", s, filepath.Join(root, ReapedPrefix+other+"-0123456789abcdef")},
		{"a dir check --quarantine moved aside", s, filepath.Join(root, QuarantinePrefix+other+"-20261201T120000Z")},
		{"the root's parent", s, base},
		// The kernel takes link/.. as the parent of the link's target.
		{"a key dir as the parent of a link's target", s, mustSymlink(filepath.Join(key, "sub"), filepath.Join(base, "elsewhere", "to-sub")) + "/.."},
		{"the parent of a root named session", s2, holder},
		{"the parent of a root whose name begins with ..", s3, dots},
	} {
		before := treeState(t, base)
		_, err := c.s.Resolve(testKey, localJob(), c.jobDir)
		if !errors.Is(err, ErrJobDirInStore) {
			t.Errorf("%s (%s): %v, want ErrJobDirInStore", c.name, c.jobDir, err)
			continue
		}
		if after := treeState(t, base); after != before {
			t.Errorf("%s: the refused resolve changed the tree:\n%s\nwas\n%s", c.name, after, before)
		}
	}

	// Beside the root, or under it outside every key, a job dir is the
	// worker's: a name check reports and everything else leaves alone.
	for _, jobDir := range []string{
		filepath.Join(base, "jobs"),
		root + "2",                        // the root's name is its name's prefix, as a string only
		filepath.Join(base, "sess"),       // its name is the root's name's prefix, as a string only
		filepath.Join(root, "..sessions"), // a name that begins with ".."
		filepath.Join(root, "jobs-1"),
		filepath.Join(root, testKey[:31]),
		filepath.Join(root, ReapedPrefix+other), // a look-alike no reap names
	} {
		if _, err := s.Resolve(testKey, localJob(), jobDir); err != nil {
			t.Errorf("job dir %s: %v, want it resolved", jobDir, err)
		}
	}
}

// A sessions root or job dir given relative is compared absolute.
func TestARelativeJobDirInARelativeRootIsRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := New("sessions", Options{})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	if _, err := s.Resolve(testKey, localJob(), filepath.Join("sessions", testKey)); !errors.Is(err, ErrJobDirInStore) {
		t.Errorf("a relative job dir in a key of a relative root: %v, want ErrJobDirInStore", err)
	}
	if _, err := s.Resolve(testKey, localJob(), "."); !errors.Is(err, ErrJobDirInStore) {
		t.Errorf("the working directory, which holds the root: %v, want ErrJobDirInStore", err)
	}
	if _, err := s.Resolve(testKey, localJob(), "job"); err != nil {
		t.Errorf("a job dir beside the root: %v", err)
	}
}

// A job dir whose path cannot be told apart from the store's is refused,
// not passed: one reached through links that lead past PATH_MAX (the
// kernel takes it; its resolution into one path fails) into a key dir,
// and a relative one whose working directory is gone (the kernel still
// takes its ".."). Both resolved before, and wrote session/ and the
// ticket into the key dir. Refused as one in the store is
// (ErrJobDirInStore), nothing made.
func TestAJobDirThatCannotBeJudgedIsRefused(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	s, _, _ := newTestStoreAt(t, root, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	key := filepath.Join(root, testKey)
	past := testfs.PastPathMax(t, base, key)

	testfs.ChdirGone(t, base)
	for _, jobDir := range []string{filepath.Join(past, "job"), filepath.Join("..", "sessions", testKey, "job")} {
		_, err := s.Resolve(testKey, localJob(), jobDir)
		if !errors.Is(err, ErrJobDirInStore) || !strings.Contains(err.Error(), "cannot be told apart from the store's directory") {
			t.Errorf("%.80s…: %v; want ErrJobDirInStore, saying it cannot be told apart", jobDir, err)
		}
	}
	names, _ := os.ReadDir(key)
	for _, n := range names {
		if n.Name() != TranscriptName && n.Name() != "meta.db" {
			t.Errorf("%s was made in the key dir", n.Name())
		}
	}
}

// BenchmarkJobDirApart is the check every resolve now makes, for a job
// dir and a root as deep as docs/job.md's (/run/jobs/1234,
// /var/lib/pi/sessions), beside the open of the job dir that follows it
// in the same resolve, the baseline of a step that looks at the path.
func BenchmarkJobDirApart(b *testing.B) {
	base := b.TempDir()
	root := filepath.Join(base, "var", "lib", "pi", "sessions")
	jobDir := filepath.Join(base, "run", "jobs", "1234")
	for _, d := range []string{root, jobDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := jobDirApart(jobDir, root); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			jd, err := openJobDir(jobDir)
			if err != nil {
				b.Fatal(err)
			}
			jd.Close()
		}
	})
}
