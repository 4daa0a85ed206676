package store

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
)

// A committed promotion's temp that is not a regular file (a FIFO, a
// link: put there out of band, as no crash leaves one) is no temp a
// writer renames: its roll-forward sweeps it, and the key holds the
// generation before it. A resolve serves that generation (servePending
// finds the temp not whole); dump, which serves the temp without reading
// it, judged the temp's own observation and said not-a-regular-file, a
// verdict no resolve of the key gives.
func TestAPendingTempThatIsNotARegularFileIsJudgedAsResolveJudgesIt(t *testing.T) {
	for name, put := range map[string]func(t *testing.T, tmp string){
		"a FIFO": func(t *testing.T, tmp string) {
			if err := syscall.Mkfifo(tmp, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"a link to the generation before": func(t *testing.T, tmp string) {
			if err := os.Symlink(TranscriptName, tmp); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			tmp := commitWithoutRename(t, s, root)
			if err := os.Remove(tmp); err != nil {
				t.Fatal(err)
			}
			put(t, tmp)
			job := t.TempDir()
			got, err := s.Resolve(testKey, localJob(), job)
			if err != nil || got.Reason != gates.Resumed || got.Gen() != 1 {
				t.Fatalf("resolve: %s gen %d, %v; want resumed at gen 1, the generation before", got.Reason, got.Gen(), err)
			}
			lj := localJob()
			for _, verify := range []bool{true, false} {
				r := inspectOne(t, s, testKey, InspectOptions{Job: &lj, Verify: verify})
				if r.Verdict == nil || r.Verdict.Reason != string(got.Reason) {
					t.Errorf("dump (verify %v): verdict %+v; resolve said %s", verify, r.Verdict, got.Reason)
				}
				// Not "its temp is gone": it is there.
				if verify && (r.Verify == nil || r.Verify.Result != VerifyOK || !strings.Contains(r.Verify.Detail, "not a regular file")) {
					t.Errorf("dump --verify: %+v; want ok, the generation before a temp that is not a regular file", r.Verify)
				}
			}
			// A writer does not rename it: the key holds the generation before
			// it, which the next promotion builds on.
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "next")
			if after, _ := mustResolve(t, s, testKey, localJob()); after.Reason != gates.Resumed || after.Gen() != 3 {
				t.Errorf("after the next promotion: %s gen %d; want resumed at gen 3", after.Reason, after.Gen())
			}
		})
	}
}
