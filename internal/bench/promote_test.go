package bench

import (
	"path/filepath"
	"testing"

	"sessdb/store"
)

// BenchmarkPromote is one promotion of a resumed run into a key that
// already holds a transcript (the steady state: meta.db exists, the history
// ring is full), for sessdb and for the legacy protocol as it is and made
// durable. The staged file stays in place: every promotion copies it, none
// consumes it.
//
//	sessdb          store.Promote with a job's ticket: the staged file read
//	                once (its checksums and pi's end of run), the base and
//	                ticket checks, temp + fsync, dir fsync, commit, rename,
//	                dir fsync (DESIGN.md, The write path)
//	legacy          §3.2 exactly, no fsync anywhere
//	legacy-durable  §3.2 with every written file fsynced before its rename
//	                and the key dir fsynced once at the end
func BenchmarkPromote(b *testing.B) {
	for _, sz := range sizes {
		data := Transcript(sz.bytes)
		b.Run(sz.name+"/sessdb", func(b *testing.B) {
			s := newStore(b, filepath.Join(workDir(b), "sessions"))
			key := benchKey(1)
			promoteN(b, s, key, data, 70) // past the 64-entry ring: trims on every commit
			// A real ticket, as a job gets it: every promotion below checks
			// the base, looks the ticket up in the history, checks the
			// delivered prefix and reads pi's end of run. Each gets a fresh
			// ticket id, based on the generation the one before it made.
			jobDir := workDir(b)
			sess, err := s.Resolve(key, job, jobDir)
			if err != nil || !sess.Resume {
				b.Fatalf("resolve: %v %+v", err, sess)
			}
			req := store.PromoteRequest{PiVersion: piVersion, Tokens: &readingTokens, Window: readingWindow}
			runs := alternateRuns(b, sess, data)
			b.SetBytes(int64(len(data)))
			n := 0
			for b.Loop() {
				n++
				res, err := runs.promote(s, n, req)
				if err != nil || !res.Promoted || res.Repeat {
					b.Fatalf("promote: %v %+v", err, res)
				}
			}
		})
		for _, durable := range []bool{false, true} {
			name := sz.name + "/legacy"
			if durable {
				name += "-durable"
			}
			b.Run(name, func(b *testing.B) {
				keyDir := filepath.Join(workDir(b), benchKey(1))
				legacyPromoteN(b, keyDir, data, 3, durable)
				staged := stageFile(b, workDir(b), data)
				o := legacyOptions{Bounds: bounds, Durable: durable}
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					res, err := legacyPromote(keyDir, staged, legacySession, legacyRequest, o)
					if err != nil || !res.Promoted || len(res.SidecarErrors) > 0 {
						b.Fatalf("legacy promote: %v %s %v", err, res.Reason, res.SidecarErrors)
					}
				}
			})
		}
	}
}
