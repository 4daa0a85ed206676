package store

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
)

// A promotion that opened a legacy key's dir (no meta.db) and waited for
// the key's lock while check --repair --quarantine held it (on a meta.db
// the quarantine made for its lock, unlinked again in the dir moved aside)
// must leave the quarantine dir as it was moved. Its open, finding no
// meta.db once it had the lock of the one unlinked, made one again, in the
// dir moved aside.
func TestQuarantineOfALegacyKeyLeavesNoMetaDBOfAWaitingPromotion(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	var armed atomic.Bool
	var hook func()
	s, err := New(root, Options{LockTimeout: 5 * time.Second, Now: func() time.Time {
		if armed.CompareAndSwap(true, false) {
			hook()
		}
		return quarantineNow
	}})
	if err != nil {
		t.Fatal(err)
	}
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(quarantineNow, "legacy")),
		"pi-version":   testPi,
	})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	hook = func() {
		go func() {
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			done <- promoted{res, err}
		}()
		waitForStack(t, "sessdb/db.lockKey") // the promotion waits for the quarantine's lock
	}
	before := entriesOf(t, filepath.Join(root, testKey))
	armed.Store(true)
	aside, err := s.Quarantine(testKey)
	if err != nil {
		t.Fatal(err)
	}
	p := <-done
	if p.err == nil || p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v; want it failed", p.res, p.err)
	}
	if got := entriesOf(t, filepath.Join(root, aside)); got != before {
		t.Fatalf("the quarantine dir holds\n%s\nwant the legacy key as it was moved:\n%s", got, before)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); err == nil {
		t.Fatal("the key dir is back after its quarantine")
	}
}

// A promotion that waited for the lock of a quarantine of a key whose
// meta.db is of an older schema must leave that meta.db as it was moved:
// its open migrated the schema, a commit in the dir moved aside, before
// the promotion saw that the dir was no longer at the key's name.
func TestQuarantineOfAnOlderSchemaKeyIsNotMigratedByAWaitingPromotion(t *testing.T) {
	s, root, quarantine := quarantineWithAWaiter(t)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	chkWriteRaw(t, root, testKey, "meta", "schema", []byte{1}) // schema 1, in msgpack
	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	aside, before := quarantine(func() {
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		done <- promoted{res, err}
	})
	p := <-done
	if p.err == nil || p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v; want it failed", p.res, p.err)
	}
	if after := treeState(t, filepath.Join(root, aside)); after != before {
		t.Fatalf("the quarantine dir changed under the promotion:\n%s\nwas\n%s", after, before)
	}
}
