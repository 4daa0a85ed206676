package fleet

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// behindBy stands in for a file server whose clock is d behind this
// host's: it stamps a file written now d ago, and reads its own now so.
func behindBy(d time.Duration) func(string) (time.Time, error) {
	return func(string) (time.Time, error) { return time.Now().Add(-d), nil }
}

// stampBack sets the mtime of key's files but the one its record names
// back by d, as a file server whose clock is d behind stamped them.
func (f *fixture) stampBack(key string, d time.Duration) {
	f.t.Helper()
	own := f.recordFile(key)
	for _, name := range f.files(key) {
		if name == own {
			continue
		}
		at := time.Now().Add(-d)
		if err := os.Chtimes(filepath.Join(f.dir, name), at, at); err != nil {
			f.t.Fatal(err)
		}
	}
}

// A file server whose clock is two hours behind the reaper's stamps a
// promotion's file, between its write and its commit, two hours old by the
// reaper's clock: far past the in-flight window. Reap (and check --repair)
// read the server's clock and judge the file by it, so the promotion lands
// on a file still there (before: reap swept it, the promotion reported
// promoted, and its key cold-started transcript-replaced, the conversation
// lost).
func TestAReaperAheadOfTheFileServerKeepsAPromotionInFlight(t *testing.T) {
	etcdtest.Beside(t)
	for _, sweeper := range []string{"reap", "check --repair"} {
		t.Run(sweeper, func(t *testing.T) {
			f := newFixture(t, etcdtest.Start1(t))
			key := store.Key("github", "file clock", sweeper)
			f.now = time.Now().Add(-3 * time.Hour)
			f.run(key, "a")
			f.now = time.Time{}
			sess, _ := f.job(key, "b")
			var swept []string
			f.b.hook = func(p, _ string) error {
				if p != hookCommit {
					return nil
				}
				f.b.hook = nil
				f.stampBack(key, 2*time.Hour)
				r := f.open()
				r.serverNow = behindBy(2 * time.Hour)
				if sweeper == "reap" {
					res, err := r.Reap(t.Context(), ReapOptions{})
					if err != nil {
						t.Errorf("reap: %v", err)
					}
					swept = res.Swept
					return nil
				}
				_, err := r.Check(t.Context(), CheckOptions{Repair: true}, func(x store.Finding) error {
					if x.Kind == KindOrphan && !x.Remains {
						swept = append(swept, x.Path)
					}
					return nil
				})
				if err != nil {
					t.Errorf("check --repair: %v", err)
				}
				return nil
			}
			res, err := f.promote(sess)
			if err != nil || !res.Promoted || res.Gen != 2 {
				t.Fatalf("promote = %+v, %v", res, err)
			}
			if len(swept) != 0 {
				t.Errorf("%s swept %v between the promotion's file and its commit", sweeper, swept)
			}
			f.holds(key, "b", 2)
		})
	}
}

// The server's clock, behind or not, changes nothing for a file truly
// past the window; and one that cannot be read leaves this host's clock,
// with a warning (a dry run reads no clock: it writes nothing, not even
// the dir's time).
func TestReapSweepsATrueOrphanWhateverTheFileClock(t *testing.T) {
	etcdtest.Beside(t)
	for _, c := range []struct {
		name  string
		clock func(string) (time.Time, error)
		warns bool
	}{
		{"server behind", behindBy(10 * time.Minute), false},
		{"server ahead", behindBy(-10 * time.Minute), false},
		{"server unread", func(string) (time.Time, error) { return time.Time{}, errors.New("EACCES stand-in") }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			f := newFixture(t, etcdtest.Start1(t), func(cfg *Config) { cfg.Logger = zerolog.New(&log) })
			key := store.Key("github", "file clock", c.name)
			f.now = time.Now().Add(-5 * time.Hour)
			f.run(key, "a")
			f.now = time.Time{}
			orphan := filepath.Join(f.dir, key, ".tmp-0123456789abcdef")
			if err := os.WriteFile(orphan, []byte("died"), 0o600); err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(-4 * time.Hour)
			if err := os.Chtimes(orphan, at, at); err != nil {
				t.Fatal(err)
			}
			f.b.serverNow = c.clock
			res, err := f.b.Reap(t.Context(), ReapOptions{})
			if err != nil || len(res.Swept) != 1 || res.Swept[0] != key+"/.tmp-0123456789abcdef" {
				t.Fatalf("reap = %+v, %v; want the temp swept", res, err)
			}
			if got := strings.Contains(log.String(), "session_file_clock_unread"); got != c.warns {
				t.Errorf("warned %v, want %v: %s", got, c.warns, log.String())
			}
			f.holds(key, "a", 1)
		})
	}
}

// A dry run and a check without --repair write nothing, not even the
// transcripts dir's time: they read no file server's clock. A reap (and a
// repairing check) sets that time, as the file server tells it.
func TestOnlyARemovingWalkTouchesTheTranscriptsDir(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "file clock", "untouched"), "a")
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	mtime := func() time.Time {
		t.Helper()
		st, err := os.Stat(f.dir)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	for _, c := range []struct {
		name    string
		walk    func() error
		touches bool
	}{
		{"reap --dry-run", func() error { _, err := f.b.Reap(t.Context(), ReapOptions{DryRun: true}); return err }, false},
		{"check", func() error {
			_, err := f.b.Check(t.Context(), CheckOptions{}, func(store.Finding) error { return nil })
			return err
		}, false},
		{"reap", func() error { _, err := f.b.Reap(t.Context(), ReapOptions{}); return err }, true},
		{"check --repair", func() error {
			_, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(store.Finding) error { return nil })
			return err
		}, true},
	} {
		if err := os.Chtimes(f.dir, old, old); err != nil {
			t.Fatal(err)
		}
		if err := c.walk(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if touched := !mtime().Equal(old); touched != c.touches {
			t.Errorf("%s: the transcripts dir's mtime is %v (was %v); touched %v, want %v", c.name, mtime(), old, touched, c.touches)
		}
	}
}

// A reaper whose clock jumped a year ahead (an NTP step, a host booted
// with its clock wrong) reads the file server's clock before it sweeps,
// and finds its own a year ahead of it. It judges the keys' TTL by the
// earlier of the two, so it removes the key that is expired by both and
// keeps the ones the fleet promoted minutes ago (before: it judged the
// TTL by its own clock alone, and one reap removed every key of the
// fleet, their conversations lost, while every other host resumed them).
func TestAReaperWhoseClockJumpedAheadKeepsFreshKeys(t *testing.T) {
	etcdtest.Beside(t)
	const year = 365 * 24 * time.Hour
	f := newFixture(t, etcdtest.Start1(t))
	old, a, b := store.Key("github", "clock ahead", "old"), store.Key("github", "clock ahead", "a"), store.Key("github", "clock ahead", "b")
	// The fleet's true time is a year behind this host's clock; the file
	// server keeps it.
	f.now = time.Now().Add(-year - 30*24*time.Hour)
	f.run(old, "old")
	f.now = time.Now().Add(-year)
	f.run(a, "a")
	f.run(b, "b")
	for _, key := range []string{old, a, b} {
		at := time.Now().Add(-year)
		for _, name := range f.files(key) {
			if err := os.Chtimes(filepath.Join(f.dir, name), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := f.open()
	r.serverNow = behindBy(year)
	res, err := r.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || !slices.Equal(res.Removed, []string{old}) || res.Kept != 2 {
		t.Fatalf("reap = %+v, %v; want only %s removed, the keys promoted by the fleet's clock kept", res, err, old)
	}
	f.holds(a, "a", 1)
	f.holds(b, "b", 1)
}

// A reaper a year ahead of the file server reads its clock before the keys
// and again before the files. Where one of the two reads fails (the server
// answering once), the files are still judged by the server's clock as the
// read that succeeded told it, not by the reaper's own a year ahead, so a
// temp just written by a promotion in flight is kept (before: the sweep
// fell back to the reaper's clock, took the temp for a year old and swept
// it, the promotion's file lost before its commit; with the first read
// failing, the second was not even tried).
func TestASecondUnreadFileClockKeepsTheFirstReading(t *testing.T) {
	etcdtest.Beside(t)
	const year = 365 * 24 * time.Hour
	for _, c := range []struct {
		name   string
		answer int // the read the server answers: the other fails
	}{
		{"the second read fails", 1},
		{"the first read fails", 2},
	} {
		t.Run(c.name, func(t *testing.T) { fileClockAnsweredOnce(t, year, c.answer) })
	}
}

// fileClockAnsweredOnce is TestASecondUnreadFileClockKeepsTheFirstReading
// with the server a year behind answering only its answer-th read.
func fileClockAnsweredOnce(t *testing.T, year time.Duration, answer int) {
	var log bytes.Buffer
	f := newFixture(t, etcdtest.Start1(t), func(cfg *Config) { cfg.Logger = zerolog.New(&log) })
	key := store.Key("github", "file clock", "second read")
	f.now = time.Now().Add(-year)
	f.run(key, "a")
	temp := filepath.Join(f.dir, key, ".tmp-0123456789abcdef")
	if err := os.WriteFile(temp, []byte("in flight"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-year)
	if err := os.Chtimes(temp, at, at); err != nil {
		t.Fatal(err)
	}
	reads := 0
	f.b.serverNow = func(dir string) (time.Time, error) {
		if reads++; reads == answer {
			return behindBy(year)(dir)
		}
		return time.Time{}, errors.New("EIO stand-in")
	}
	// No TTL: the files alone are judged (a key is judged by the first
	// read, or by this host's clock where it failed).
	res, err := f.b.Reap(t.Context(), ReapOptions{})
	if err != nil || len(res.Swept) != 0 || len(res.Removed) != 0 {
		t.Fatalf("reap = %+v, %v; want the temp in flight and the key kept", res, err)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Fatalf("the temp in flight: %v", err)
	}
	if n := strings.Count(log.String(), "session_file_clock_unread"); n != 1 || reads != 2 {
		t.Errorf("warned %d times after %d reads, want once after 2: %s", n, reads, log.String())
	}
	f.holds(key, "a", 1)
}
