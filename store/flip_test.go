package store

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// A promotion into a meta.db damaged by one flipped byte either refuses,
// or lands so that the next resolve resumes exactly what it promoted, at a
// generation higher than any the key had (issue 15, item 4): acknowledged
// work is never lost into a file readers refuse.

// flipTemplate is a key with a few promotions behind it, to be copied and
// damaged.
type flipTemplate struct {
	transcript, meta []byte
	gen              uint64
}

func newFlipTemplate(t testing.TB) flipTemplate {
	root := filepath.Join(t.TempDir(), "sessions")
	s, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var gen uint64
	for i := 0; i < 6; i++ {
		sess, jobDir := resolveTB(t, s)
		data, _ := os.ReadFile(filepath.Join(jobDir, StagedDirName, TranscriptName))
		if len(data) == 0 {
			data = transcriptBytes(testClockStart)
		}
		os.WriteFile(filepath.Join(jobDir, StagedDirName, TranscriptName), append(data, entryLine("turn "+strconv.Itoa(i))...), 0o600)
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		if err != nil || !res.Promoted {
			t.Fatalf("template promote %d: %+v %v", i, res, err)
		}
		gen = res.Gen
	}
	tr, _ := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	m, _ := os.ReadFile(filepath.Join(root, testKey, db.FileName))
	return flipTemplate{tr, m, gen}
}

func resolveTB(t testing.TB, s *Store) (Session, string) {
	jobDir := t.TempDir()
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	if err != nil {
		t.Fatal(err)
	}
	return sess, jobDir
}

// promoteAfterFlip damages a copy of tmpl at off with x, runs one job on it
// and checks the promise. It reports whether the promotion landed.
func promoteAfterFlip(t testing.TB, tmpl flipTemplate, off int, x byte) bool {
	root := filepath.Join(t.TempDir(), "sessions")
	kd := filepath.Join(root, testKey)
	os.MkdirAll(kd, 0o700)
	meta := bytes.Clone(tmpl.meta)
	meta[off%len(meta)] ^= x | 1
	os.WriteFile(filepath.Join(kd, TranscriptName), tmpl.transcript, 0o600)
	os.WriteFile(filepath.Join(kd, db.FileName), meta, 0o600)
	s, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess, jobDir := resolveTB(t, s)
	staged := filepath.Join(jobDir, StagedDirName, TranscriptName)
	data, _ := os.ReadFile(staged)
	if len(data) == 0 {
		data = transcriptBytes(testClockStart)
	}
	data = append(data, entryLine("after the flip")...)
	os.WriteFile(staged, data, 0o600)
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if !res.Promoted {
		if err == nil && res.Reason == gates.PromoteFailed {
			t.Fatalf("flip at %d: promote-failed without a cause", off)
		}
		return false
	}
	if res.Gen <= tmpl.gen {
		t.Fatalf("flip at %d (^%#x): promoted gen %d, but the key had reached gen %d", off, x|1, res.Gen, tmpl.gen)
	}
	next, err := s.Resolve(testKey, localJob(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !next.Resume || next.Gen() != res.Gen || next.Bytes != res.Bytes {
		t.Fatalf("flip at %d (^%#x): promoted gen %d (%d bytes), but the next resolve says %s at gen %d (%d bytes)", off, x|1, res.Gen, res.Bytes, next.Reason, next.Gen(), next.Bytes)
	}
	return true
}

func TestPromoteAfterRandomFlips(t *testing.T) {
	tmpl := newFlipTemplate(t)
	n := 300
	if testing.Short() {
		n = 50
	}
	if v, err := strconv.Atoi(os.Getenv("SESSDB_FLIP_ROUNDS")); err == nil && v > 0 {
		n = v
	}
	seed := int64(len(tmpl.meta))
	rng := rand.New(rand.NewSource(seed))
	landed := 0
	for i := 0; i < n; i++ {
		if promoteAfterFlip(t, tmpl, rng.Intn(len(tmpl.meta)), byte(rng.Intn(256))) {
			landed++
		}
	}
	t.Logf("%d flips of a %d-byte meta.db: %d promotions landed and resumed, %d refused", n, len(tmpl.meta), landed, n-landed)
}

func FuzzPromoteAfterFlip(f *testing.F) {
	tmpl := newFlipTemplate(f)
	for _, off := range []int{0, 16, 4096, 4200, len(tmpl.meta) / 2, len(tmpl.meta) - 1} {
		f.Add(off, byte(0x80))
	}
	f.Fuzz(func(t *testing.T, off int, x byte) {
		if off < 0 {
			off = -off
		}
		promoteAfterFlip(t, tmpl, off, x)
	})
}

// damageNewestMetaPage flips a byte in the meta page with the higher txid,
// so bbolt falls back to the commit before it.
func damageNewestMetaPage(t *testing.T, path string) {
	t.Helper()
	m := metaPagesOf(t, path)
	newest := 0
	if m.Pages[1].Txid > m.Pages[0].Txid {
		newest = 1
	}
	b, _ := os.ReadFile(path)
	b[newest*m.PageSize+40] ^= 0xff // inside the meta, covered by its checksum
	os.WriteFile(path, b, 0o600)
}

func TestPromoteRefusesAMetaDBThatLostItsLastCommit(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	damageNewestMetaPage(t, filepath.Join(root, testKey, db.FileName))
	before := treeState(t, root)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.TranscriptReplaced) // the older commit describes "one"
	stage(t, jobDir, transcriptBytes(testClockStart, "a cold start over the lost commit"))
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if res.Promoted || !errors.Is(err, ErrMetaFellBack) {
		t.Fatalf("promote over a lost commit = %+v, %v; want promote-failed with ErrMetaFellBack", res, err)
	}
	if after := treeState(t, root); after != before {
		t.Fatal("the refused promotion changed the key")
	}
}

// A power cut in the middle of a commit tears the same page, but then the
// rename never happened: the older commit describes what is in place, and
// promotions go on.
func TestPromoteGoesOnAfterACommitTornByAPowerCut(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	one := readCanonical(t, root, testKey)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	damageNewestMetaPage(t, filepath.Join(root, testKey, db.FileName))
	os.WriteFile(filepath.Join(root, testKey, TranscriptName), one, 0o600) // the rename never happened
	_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "three")
	if res.Gen != 2 {
		t.Fatalf("promoted gen %d, want 2 (the torn commit's number was never acknowledged)", res.Gen)
	}
	if got := markerOf(readCanonical(t, root, testKey), 1); got != "three" {
		t.Fatalf("the key holds %q", got)
	}
}
