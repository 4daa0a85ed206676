package store

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"sync"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A resolve and a dump --verify that start while a writer is stopped
// between two of its steps (holding the key's lock), and wait for it,
// hand over and report one whole generation, or name a cold start: the
// staged bytes are the ones the session's size, CRC32C and base describe,
// and dump's record is the one its verify read. The writer either goes on
// from the point (go) or fails there (a crash's state, for the reader that
// comes after: the writer's lock is released).
func TestReadersWaitingOnAWriterAtEachStep(t *testing.T) {
	type step struct {
		point faults.Point
		reap  bool
		fail  bool
	}
	var steps []step
	for _, p := range []faults.Point{faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		steps = append(steps, step{point: p}, step{point: p, fail: true})
	}
	for _, p := range []faults.Point{faults.ReapBeforeRemove, faults.ReapBeforeRename, faults.ReapAfterRename, faults.ReapAfterTranscript} {
		steps = append(steps, step{point: p, reap: true}, step{point: p, reap: true, fail: true})
	}
	for _, c := range steps {
		name := string(c.point)
		if c.fail {
			name += "/fails"
		}
		t.Run(name, func(t *testing.T) {
			s, _, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			var sess Session
			if c.reap {
				expiredKey(t, s, clock, testKey)
			} else {
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
				var jobDir string
				sess, jobDir = mustResolve(t, s, testKey, localJob())
				stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
			}
			type read struct {
				sess   Session
				staged []byte
				report KeyReport
				err    error
			}
			reads, finished := make(chan read, 1), make(chan struct{})
			var once sync.Once
			faults.Set(func(p faults.Point) error {
				if p != c.point {
					return nil
				}
				stopped := false
				once.Do(func() {
					stopped = true
					go func() {
						var r read
						jobDir := t.TempDir()
						r.sess, r.err = s.Resolve(testKey, localJob(), jobDir)
						if r.err == nil {
							r.staged = staged(t, jobDir)
							r.err = s.InspectWith(context.Background(), InspectOptions{Only: testKey, Verify: true, Job: &Job{PiVersion: testPi, Venue: "local"}}, func(k KeyReport) error { r.report = k; return nil })
						}
						reads <- r
						close(finished)
					}()
					// The resolve waits for the writer's lock, or needs
					// none (the key dir is gone from its name).
					waiting := make(chan struct{})
					go releaseWhenWaiting(finished, waiting)
					<-waiting
				})
				if stopped && c.fail {
					return errors.New("the writer stops here")
				}
				return nil
			})
			if c.reap {
				s.Reap(false)
			} else {
				s.Promote(sess, PromoteRequest{PiVersion: testPi})
			}
			faults.Set(nil)
			r := <-reads
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := r.sess
			sum := crc32.Checksum(r.staged, castagnoli)
			switch {
			case !got.Resume && !c.reap:
				t.Fatalf("a key resumable before and after the promotion cold-started: %s", got.Reason)
			case !got.Resume:
				if len(r.staged) != 0 || got.Reason == "" || got.Reason == gates.Locked {
					t.Fatalf("cold start %q staged %d bytes", got.Reason, len(r.staged))
				}
			case got.Bytes != int64(len(r.staged)) || uint32(got.CRC32C) != sum || got.Base.Size != got.Bytes || uint32(got.Base.CRC32C) != sum:
				t.Fatalf("resumed %d bytes (CRC32C %08x), but the session says %d bytes, %08x, base %+v", len(r.staged), sum, got.Bytes, uint32(got.CRC32C), got.Base)
			case c.reap:
				t.Fatalf("resumed %d bytes of a key a reap removed, or was removing", len(r.staged))
			}
			if got.Resume {
				want := int64(1)
				if bytes.Contains(r.staged, []byte("two")) {
					want = 2
				}
				if int64(got.Gen()) != want {
					t.Fatalf("staged generation %d's bytes as gen %d", want, got.Gen())
				}
			}
			k := r.report
			if v := k.Verify; k.RecordBytes != nil && v != nil && v.Result == VerifyOK && k.Pending == nil && (v.Bytes != *k.RecordBytes || v.CRC32C != *k.CRC32C) {
				t.Fatalf("dump: record %d bytes %08x, verify ok of %d bytes %08x", *k.RecordBytes, *k.CRC32C, v.Bytes, v.CRC32C)
			}
			if k.Verdict != nil && k.Verdict.Reason == string(gates.Resumed) && (k.Verify == nil || k.Verify.Result != VerifyOK) {
				t.Fatalf("dump: verdict resumed beside verify %+v", k.Verify)
			}
		})
	}
}
