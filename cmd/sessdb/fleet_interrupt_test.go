package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/store"
)

// cancelOnWrite is a stderr that runs cancel the first time a line
// holding mark is written to it: the walk's own report of a repair it
// made, the hook an interrupt in the middle of a walk needs.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel func()
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil && bytes.Contains(p, []byte(w.mark)) {
		w.cancel()
		w.cancel = nil
	}
	return w.buf.Write(p)
}

// Ctrl-C in the middle of reap's and check --repair's walks of a fleet:
// exit 130, a summary marked interrupted, every removal made printed and
// none printed that was not made (a key's record gone, an orphan's file
// gone), and nothing of the locks left in etcd: no lease, no lock key
// (the next reap or repair of those keys is not told "locked" for a TTL).
// cli.md promises the first two; nothing tested them on a fleet.
func TestFleetWalksInterruptedMidWayReportWhatTheyDidAndLeaveNoLock(t *testing.T) {
	f := startFleet(t)
	prev, prevCtx := clock, interruptContext
	t.Cleanup(func() { clock, interruptContext = prev, prevCtx })
	then := time.Now().Add(-20 * 24 * time.Hour)
	clock = func() time.Time { return then }
	var keys []string
	for i := range 6 {
		key := store.Key("github", "interrupted", string(rune('a'+i)))
		f.run(t, key, "job-"+key[:6])
		// An orphan past the grace period beside each key's record.
		p := filepath.Join(f.dir, key, "0000000000000009-0123456789abcdef.jsonl")
		os.WriteFile(p, []byte(header), 0o600)
		old := time.Now().Add(-3 * time.Hour)
		os.Chtimes(p, old, old)
		keys = append(keys, key)
	}
	sort.Strings(keys)
	clock = time.Now
	cli := f.c.Client(t)
	ctx := context.Background()
	noLock := func(what string) {
		t.Helper()
		// A lease may outlive the walk holding no key: a lock's grant
		// the interrupt cancelled in flight can land unanswered, and
		// cannot be revoked (Lock's doc); it locks nothing, and ends
		// within the lock's TTL. A lease that holds a key, or that would
		// outlive the TTL, is a lock left.
		leases, err := cli.Leases(ctx)
		if err != nil {
			t.Fatalf("%s: leases: %v", what, err)
		}
		for _, l := range leases.Leases {
			ttl, err := cli.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
			if err != nil {
				t.Fatalf("%s: lease %x: %v", what, l.ID, err)
			}
			if len(ttl.Keys) != 0 || time.Duration(ttl.TTL)*time.Second > etcdmeta.DefaultLockTTL {
				t.Errorf("%s: lease %x left holding %q, %d s to live; want none, or one holding no key that ends within the lock's TTL", what, l.ID, ttl.Keys, ttl.TTL)
			}
		}
		locks, err := cli.Get(ctx, f.prefix+"/lock/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || locks.Count != 0 {
			t.Errorf("%s: %d lock keys left (%v); want none", what, locks.Count, err)
		}
	}
	interrupt := func() func() {
		c, cancel := context.WithCancel(context.Background())
		interruptContext = func() (context.Context, context.CancelFunc) { return c, cancel }
		return cancel
	}
	lines := func(out string) (actions []map[string]any, summary map[string]any) {
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("a line that is no JSON: %q", l)
			}
			if s, ok := m["summary"].(map[string]any); ok {
				summary = s
			} else {
				actions = append(actions, m)
			}
		}
		return actions, summary
	}

	// check --repair, interrupted as its first removal is reported.
	w := &cancelOnWrite{mark: "check_repaired", cancel: interrupt()}
	var out bytes.Buffer
	code := run([]string{"check", "--repair", "--json", "--log-level", "info", "--log-format", "json"}, &out, w)
	findings, sum := lines(out.String())
	if code != exitInterrupted || sum["interrupted"] != true {
		t.Fatalf("check --repair interrupted: exit %d, summary %v\n%s%s", code, sum, out.String(), w.buf.String())
	}
	repaired := map[string]bool{}
	for _, fd := range findings {
		if fd["repaired"] == true {
			repaired[fd["path"].(string)] = true
		}
	}
	for _, key := range keys {
		name := key + "/0000000000000009-0123456789abcdef.jsonl"
		_, err := os.Lstat(filepath.Join(f.dir, name))
		if gone := os.IsNotExist(err); gone != repaired[name] {
			t.Errorf("check --repair interrupted: %s gone %v, reported removed %v", name, gone, repaired[name])
		}
	}
	if len(repaired) == 0 || len(repaired) == len(keys) {
		t.Errorf("check --repair interrupted removed %d of %d orphans: want the interrupt mid-way", len(repaired), len(keys))
	}
	noLock("check --repair interrupted")

	// reap, every key expired by a clock 30 days on, interrupted as it
	// judges the second key under its lock (the clock's fourth reading:
	// each key is read once by the walk, once under its lock).
	cancel := interrupt()
	var reads int
	var mu sync.Mutex
	clock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if reads++; reads == 4 {
			cancel()
		}
		return time.Now().Add(30 * 24 * time.Hour)
	}
	code, o, errs := runCLI(t, "reap", "--json")
	clock = time.Now
	actions, sum := lines(o)
	if code != exitInterrupted || sum["interrupted"] != true {
		t.Fatalf("reap interrupted: exit %d, summary %v\n%s%s", code, sum, o, errs)
	}
	removed := map[string]bool{}
	for _, a := range actions {
		if a["action"] == "remove-key" {
			removed[a["path"].(string)] = true
		}
	}
	for _, key := range keys {
		r, err := cli.Get(ctx, f.prefix+"/record/"+key, clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if gone := r.Count == 0; gone != removed[key] {
			t.Errorf("reap interrupted: %s gone from etcd %v, reported removed %v", key, gone, removed[key])
		}
	}
	if len(removed) == 0 || len(removed) == len(keys) {
		t.Errorf("reap interrupted removed %d of %d keys: want the interrupt mid-way", len(removed), len(keys))
	}
	noLock("reap interrupted")
}
