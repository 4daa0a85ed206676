package fleet

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The fstat right after a generation's open failing ESTALE (NFS: another
// host removed the file between the OPEN and the GETATTR) is the file
// gone, as at the open and at its first line: resolve transcript-replaced
// on the record's base, dump's verdict transcript-replaced, check's
// "missing". Before: resolve failed (a fault, exit 1), dump reported it
// with no verdict, check as unreadable.
func TestGenerationStaleAtItsFstatIsGone(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "stale-fstat", "x")
	f.run(key, "one")
	defer func() { statGeneration = (*os.File).Stat }()
	statGeneration = func(g *os.File) (os.FileInfo, error) {
		return nil, &os.PathError{Op: "stat", Path: g.Name(), Err: unix.ESTALE}
	}
	sess, err := f.s.Resolve(key, testJob, t.TempDir())
	if err != nil || sess.Resume || sess.Reason != gates.TranscriptReplaced || sess.Base.Gen != 1 {
		t.Errorf("resolve = %+v, %v; want transcript-replaced on gen 1", sess, err)
	}
	var reps []Report
	if err := f.b.Inspect(context.Background(), InspectOptions{}, func(r Report) error { reps = append(reps, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Verdict == nil || reps[0].Verdict.Reason != string(gates.TranscriptReplaced) || !strings.Contains(reps[0].Problem, "missing") {
		t.Errorf("dump = %+v; want missing, transcript-replaced", reps)
	}
	var finds []store.Finding
	if _, err := f.b.Check(context.Background(), CheckOptions{}, func(x store.Finding) error { finds = append(finds, x); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(finds) != 1 || finds[0].Kind != store.KindTranscriptMismatch || !strings.Contains(finds[0].Detail, "missing") {
		t.Errorf("check = %+v; want the generation missing", finds)
	}
}
