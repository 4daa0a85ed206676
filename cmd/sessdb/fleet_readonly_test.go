package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdPrint is every key under prefix with its value and revisions, and
// the cluster's revision: what a write of any kind moves.
func etcdPrint(t *testing.T, cli *clientv3.Client, prefix string) (keys string, rev int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, kv := range resp.Kvs {
		fmt.Fprintf(&b, "%s create %d mod %d version %d lease %x %q\n", kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease, kv.Value)
	}
	return b.String(), resp.Header.Revision
}

// dump (every form), check without --repair, reap --dry-run and stats
// (every form) on a fleet
// holding every leftover a worker, a killed command or an operator can
// leave change nothing in the transcripts dir (not even its times, which
// reap and check --repair set to read the file server's clock) and write
// nothing to etcd: no record, history or lock key, and the cluster's
// revision stays (reap --dry-run took each expired key's lock, a lease
// and a key written, until it was made to take none). None waits on a
// FIFO.
// The root's twin is TestReadOnlyCommandsLeaveEveryLeftoverAsItIs; on a
// fleet no test asserted it.
func TestFleetReadOnlyCommandsLeaveEveryLeftoverAsItIs(t *testing.T) {
	f := walkedFleet(t)
	cli := f.c.Client(t)
	ctx := context.Background()
	put := func(k, v string) {
		if _, err := cli.Put(ctx, f.prefix+k, v); err != nil {
			t.Fatal(err)
		}
	}
	// A record that does not decode, one whose name is no key, a history
	// entry in the last slot (a copy of the key's newest).
	put("/record/"+fleetNoRecord[:31]+"f", "{not json")
	put("/record/not-a-key", "{}")
	h, err := cli.Get(ctx, f.prefix+"/history/"+fleetResumable+"/", clientv3.WithLastKey()...)
	if err != nil || len(h.Kvs) != 1 {
		t.Fatalf("the resumable key's history: %v, %v", h, err)
	}
	put("/history/"+fleetResumable+"/fffffffffffffffe", string(h.Kvs[0].Value))
	// A young temp, an empty key dir, a link and a FIFO at generation
	// names of their keys.
	young := filepath.Join(f.dir, fleetResumable, ".tmp-00000000feedface")
	os.WriteFile(young, []byte("young"), 0o600)
	empty := strings.Replace(fleetNoRecord, fleetNoRecord[:4], "0e0e", 1)
	os.Mkdir(filepath.Join(f.dir, empty), 0o700)
	os.Symlink("/srv/elsewhere", filepath.Join(f.dir, fleetExpired, "0000000000000009-0000000000000000.jsonl"))
	if err := syscall.Mkfifo(filepath.Join(f.dir, fleetGrown, "0000000000000007-0000000000000000.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO at the very name a record names (the missing key's file).
	rec, err := cli.Get(ctx, f.prefix+"/record/"+fleetMissing)
	if err != nil || len(rec.Kvs) != 1 {
		t.Fatalf("the missing key's record: %v, %v", rec, err)
	}
	own := regexp.MustCompile(fleetMissing + `/[0-9a-f]{16}-[0-9a-f]{16}\.jsonl`).FindString(string(rec.Kvs[0].Value))
	if err := syscall.Mkfifo(filepath.Join(f.dir, own), 0o600); own == "" || err != nil {
		t.Fatalf("a FIFO at the record's file %q: %v", own, err)
	}
	dirBefore := fingerprint(t, f.dir)
	keysBefore, revBefore := etcdPrint(t, cli, f.prefix)
	for _, args := range [][]string{
		{"dump"}, {"dump", "--json", "--verify", "--history", "64"}, {"dump", "--verify", "--wide"},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local"},
		{"dump", "--key", fleetResumable, "--verify", "--history", "3"},
		{"dump", "--key", fleetMissing, "--json"},
		{"check"}, {"check", "--json", "--grace", "1s"},
		{"reap", "--dry-run"}, {"reap", "--dry-run", "--ttl-days", "1", "--grace", "1s", "--json"},
		{"stats"}, {"stats", "--json", "--since", "10000h"}, {"stats", "--prometheus"},
	} {
		done := make(chan struct{})
		var code int
		var out, errs string
		go func() {
			defer close(done)
			code, out, errs = runCLI(t, args...)
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%v has not ended after 60 s", args)
		}
		if out == "" || code != exitOK && code != exitFault && code != exitIssues {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		if args[0] == "check" && !strings.Contains(out, own+": not-a-regular-file") && !strings.Contains(out, `"path":"`+own+`","key":"`+fleetMissing+`","kind":"not-a-regular-file"`) {
			t.Errorf("%v does not report the FIFO at %s\n%s", args, own, out)
		}
		if after := fingerprint(t, f.dir); after != dirBefore {
			t.Fatalf("%v changed the transcripts dir:\n%s", args, fingerprintDiff(dirBefore, after))
		}
		keys, rev := etcdPrint(t, cli, f.prefix)
		if keys != keysBefore {
			t.Fatalf("%v changed the fleet's keys in etcd:\n%s", args, fingerprintDiff(keysBefore, keys))
		}
		if rev != revBefore {
			t.Fatalf("%v wrote to etcd: its revision went from %d to %d", args, revBefore, rev)
		}
		revBefore = rev
	}
}
