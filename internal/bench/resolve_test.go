package bench

import (
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// BenchmarkResolve is one resolve of a key into a new job dir, as every job
// has its own, for sessdb and the legacy protocol. Making the job dir and
// emptying the previous one's copy are outside the timer (see freshDirs).
//
//	resume  every rung passes and the transcript is copied: sessdb checks
//	        the copy's size and CRC32C against meta.db (the integrity
//	        check); the legacy store re-reads the venue and re-lstats the
//	        transcript after its copy
//	cold    the job declares another pi version: both refuse at rung 7
//	        and stage a 0-byte file, the legacy store after reading the
//	        venue and pi-version sidecars, sessdb after reading meta.db
func BenchmarkResolve(b *testing.B) {
	for _, sz := range sizes {
		data := Transcript(sz.bytes)
		for _, resume := range []bool{true, false} {
			verdict := sz.name + "/resume"
			j, lj := job, legacyJob
			want := gates.Resumed
			if !resume {
				verdict = sz.name + "/cold"
				j, lj.PiVersion = otherJob, otherJob.PiVersion
				want = gates.PiVersionChanged
			}
			b.Run(verdict+"/sessdb", func(b *testing.B) {
				s := newStore(b, filepath.Join(workDir(b), "sessions"))
				key := benchKey(1)
				promoteN(b, s, key, data, 70)
				next := freshDirs(b)
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sess, err := s.Resolve(key, j, next())
					if err != nil || sess.Reason != want {
						b.Fatalf("resolve: %v %s, want %s", err, sess.Reason, want)
					}
				}
			})
			b.Run(verdict+"/legacy", func(b *testing.B) {
				keyDir := filepath.Join(workDir(b), benchKey(1))
				legacyPromoteN(b, keyDir, data, 3, false)
				next := freshDirs(b)
				o := legacyOptions{Bounds: bounds}
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					v, err := legacyResolve(keyDir, next(), lj, o)
					if err != nil || v.Reason != want {
						b.Fatalf("legacy resolve: %v %s, want %s", err, v.Reason, want)
					}
				}
			})
		}
	}
}
