package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A transcripts dir that is itself unavailable (gone, or not a directory:
// an export that went away, a mount point replaced) is the store's
// fault, not each key's: a resolve is the named cold start
// store-unavailable, its cause (the dir) logged once, with no base (see
// TestAJobResolvedWhileTheDirIsAwayNeverReplacesTheConversation); dump, check and reap stop with an error naming the dir, report
// no key missing and remove nothing. Before: every resolve was
// transcript-replaced (a file at the dir's name: a fault), and dump
// reported every key's transcript missing.
func TestAnUnavailableTranscriptsDirIsStoreUnavailable(t *testing.T) {
	etcdtest.Beside(t)
	var log bytes.Buffer
	f := newFixture(t, etcdtest.Start1(t), func(c *Config) { c.Logger = zerolog.New(&log) })
	key := store.Key("github", "root-gone", "x")
	f.run(key, "one")
	file := f.recordFile(key)
	away := f.dir + ".away"
	for _, c := range []struct {
		name string
		make func()
	}{
		{"gone", func() {}},
		{"a file", func() { os.WriteFile(f.dir, []byte("x"), 0o600) }},
	} {
		if err := os.Rename(f.dir, away); err != nil {
			t.Fatal(err)
		}
		c.make()
		log.Reset()
		sess, jobDir := resolveOn(t, f.s, key)
		if sess.Resume || sess.Reason != gates.StoreUnavailable || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
			t.Errorf("%s: resolve = %+v; want store-unavailable with no base", c.name, sess)
		}
		if lines := strings.Split(strings.TrimSpace(log.String()), "\n"); len(lines) != 1 ||
			!strings.Contains(lines[0], "session_store_unavailable") || !strings.Contains(lines[0], f.dir) {
			t.Errorf("%s: log %q; want the dir's cause once", c.name, log.String())
		}
		var reps []Report
		err := f.b.Inspect(context.Background(), InspectOptions{Verify: true}, func(r Report) error { reps = append(reps, r); return nil })
		if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) || len(reps) != 0 {
			t.Errorf("%s: dump = %+v, %v; want the dir named, no key reported", c.name, reps, err)
		}
		var finds []store.Finding
		_, err = f.b.Check(context.Background(), CheckOptions{Repair: true}, func(x store.Finding) error { finds = append(finds, x); return nil })
		if err == nil || !strings.Contains(err.Error(), f.dir) || len(finds) != 0 {
			t.Errorf("%s: check = %+v, %v; want the dir named, no finding", c.name, finds, err)
		}
		res, err := f.b.Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		if err == nil || !strings.Contains(err.Error(), f.dir) || len(res.Removed)+len(res.Swept) != 0 {
			t.Errorf("%s: reap = %+v, %v; want the dir named, nothing removed", c.name, res, err)
		}
		os.Remove(f.dir)
		if err := os.Rename(away, f.dir); err != nil {
			t.Fatal(err)
		}
		if f.recordFile(key) != file {
			t.Fatalf("%s: the record changed", c.name)
		}
	}
	f.holds(key, "one", 1)
}

// The dir going away under a walk stops it, naming the dir: check at a
// key's generation (before: "missing, but the record describes gen 1",
// exit 3, for every key left), reap at its sweep (before: each removal
// failed "not found", taken as another reaper's, and the reap exited 0).
func TestTheTranscriptsDirGoneUnderAWalkStopsIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "root-gone-walk", "x")
	f.run(key, "one")
	gen1 := f.recordFile(key)
	f.run(key, "two")
	away := f.dir + ".away"
	goAway := func(point string) func(string, string) error {
		return func(p, _ string) error {
			if p == point {
				os.Rename(f.dir, away)
			}
			return nil
		}
	}
	back := func() {
		t.Helper()
		if _, err := os.Stat(away); err == nil {
			if err := os.Rename(away, f.dir); err != nil {
				t.Fatal(err)
			}
		}
	}

	f.b.hook = goAway(hookCheckOpen)
	var finds []store.Finding
	_, err := f.b.Check(context.Background(), CheckOptions{}, func(x store.Finding) error { finds = append(finds, x); return nil })
	f.b.hook = nil
	back()
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) || len(finds) != 0 {
		t.Errorf("check = %+v, %v; want the dir named, no finding", finds, err)
	}

	f.b.hook = goAway(hookSweep)
	res, err := f.b.Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	f.b.hook = nil
	back()
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) || len(res.Swept) != 0 {
		t.Errorf("reap = %+v, %v; want the dir named, nothing swept", res, err)
	}
	if got := f.files(key); len(got) != 2 || got[0] != gen1 && got[1] != gen1 {
		t.Errorf("files %v; want both generations kept", got)
	}
	f.holds(key, "two", 2)

	// An expired key: its record goes by its date, as it would with the
	// dir there; its file's removal then fails, and the reap stops there
	// (before: logged, and the walk went on to the next key).
	other := store.Key("github", "root-gone-ttl", "x")
	f.run(other, "one")
	before := strings.Join(append(f.files(key), f.files(other)...), " ")
	f.b.hook = goAway(hookReapDelete)
	res, err = f.b.Reap(context.Background(), ReapOptions{TTL: time.Nanosecond})
	f.b.hook = nil
	back()
	if !errors.Is(err, shared.ErrDirUnavailable) || len(res.Removed) != 1 || len(res.Swept) != 0 {
		t.Errorf("reap with a TTL = %+v, %v; want one key removed, then the dir named", res, err)
	}
	if after := strings.Join(append(f.files(key), f.files(other)...), " "); after != before {
		t.Errorf("files %s; want all kept: %s", after, before)
	}
}
