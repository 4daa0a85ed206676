package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/testfs"
)

// promoteStaged resolves testKey on s, lets plant set up the staged file,
// and promotes it, failing if the promotion hangs.
func promoteStaged(t *testing.T, s *Store, plant func(p string)) PromoteResult {
	t.Helper()
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	p := filepath.Join(jobDir, StagedDirName, TranscriptName)
	os.Remove(p)
	plant(p)
	done := make(chan PromoteResult, 1)
	go func() { done <- mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}) }()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("promote hung")
	}
	return PromoteResult{}
}

// A hard link is a regular file, but one with another name somewhere: the
// container could only make it to a file it can see, yet promoting it
// would copy that file's bytes into the store. It is refused like a link.
func TestHardLinkedStagedFileIsRefused(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	host := filepath.Join(t.TempDir(), "host.jsonl")
	os.WriteFile(host, transcriptBytes(time.Now(), "host file"), 0o600)
	res := promoteStaged(t, s, func(p string) {
		if err := os.Link(host, p); err != nil {
			t.Skipf("cannot hard-link across these temp dirs: %v", err)
		}
	})
	if res.Promoted || res.Reason != gates.NotARegularFile {
		t.Fatalf("promote of a hard link = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(root, testKey)); !os.IsNotExist(err) {
		t.Error("a refused promotion created the key dir")
	}
}

func TestDeviceNodeStagedFileIsRefused(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	res := promoteStaged(t, s, func(p string) {
		// /dev/null's numbers: a character device whose open is harmless.
		if err := testfs.MknodNull(p); err != nil {
			t.Skipf("mknod not permitted: %v", err)
		}
	})
	if res.Promoted || res.Reason != gates.NotARegularFile {
		t.Fatalf("promote of a device node = %+v", res)
	}
}

func TestSparseHugeStagedFileIsTooLargeWithoutReading(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{MaxBytes: 8 << 20})
	start := time.Now()
	res := promoteStaged(t, s, func(p string) {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(10 << 30); err != nil {
			t.Skipf("no sparse files here: %v", err)
		}
	})
	if res.Promoted || res.Reason != gates.TooLarge {
		t.Fatalf("promote of a 10 GiB sparse file = %+v", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing took %v: the file was read", d)
	}
	if _, err := os.Stat(filepath.Join(root, testKey)); !os.IsNotExist(err) {
		t.Error("a refused promotion created the key dir")
	}
}

func TestHugeHeaderLineIsUnparseable(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{MaxBytes: 0})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "x")
	// Replace the transcript with a 20 MB first line with no newline, and
	// give the record its identity, so only the header gate can refuse it.
	line := `{"type":"session","id":"` + strings.Repeat("a", 20<<20) + `"`
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, []byte(line+"\n"))
	mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
	start := time.Now()
	got, _ := mustResolve(t, s, testKey, localJob())
	want(t, got, false, gates.Unparseable)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("judging a 20 MB header took %v", d)
	}
	_ = root
}

// writeRaw writes one value into a key's meta.db with bbolt directly,
// bypassing package db's encoders.
func writeRaw(t *testing.T, root, key, bucket, name string, v any) {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(root, key, db.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put([]byte(name), b) }); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaIsMetaUnreadableAndNeverWritten(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "x")
	writeRaw(t, root, testKey, "meta", "schema", uint64(db.SchemaVersion+1))
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.MetaUnreadable)
	before := treeState(t, root)
	sess, jobDir := mustResolve(t, s, Key("github", "other", "x"), localJob())
	sess.Key = testKey
	stage(t, jobDir, transcriptBytes(time.Now(), "newer"))
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.PromoteFailed || err == nil {
		t.Fatalf("promote into a newer schema = %+v, %v", res, err)
	}
	if after := treeState(t, root); after != before {
		t.Fatal("a newer-schema meta.db was written")
	}
}

func TestRecordOfTheWrongTypeIsMetaUnreadable(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "x")
	writeRaw(t, root, testKey, "sidecars", "resume-chain", "three")
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.MetaUnreadable)
}

// A staged file that grows while it is promoted (a process in the
// container still appending) is promoted as the fstat saw it: a whole
// prefix, described by its record, never a mix. Five rounds: a promote
// that reads the staged file on to its end, where it checksums it or
// where it copies it, failed 20 runs of 20 at five; each round promotes
// the last one's transcript and up to a MiB more, so later rounds cost
// the most (under the race detector, 5.0 s of CPU at twenty, 0.5 s at
// five).
func TestStagedFileGrowingDuringPromote(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	const rounds = 5
	for round := range rounds {
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		p := filepath.Join(jobDir, StagedDirName, TranscriptName)
		base := staged(t, jobDir)
		if len(base) == 0 {
			base = transcriptBytes(time.Now())
		}
		base = append(base, []byte(strings.Repeat(entryLine("payload"), 500))...)
		stage(t, jobDir, base)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return
			}
			defer f.Close()
			// Up to 1 MiB a round: unbounded, the writer outran the
			// promotion by 20 MB a round, which only made the test slow.
			line := []byte(entryLine("appended"))
			for written := 0; written < 1<<20; written += len(line) {
				select {
				case <-stop:
					return
				default:
					f.Write(line)
				}
			}
		}()
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		close(stop)
		<-done
		if err != nil || !res.Promoted {
			t.Fatalf("promote = %+v, %v", res, err)
		}
		final, _ := os.ReadFile(p)
		got := readCanonical(t, root, testKey)
		if !bytes.HasPrefix(final, got) && !bytes.Equal(append(final[:len(got)-1:len(got)-1], '\n'), got) {
			t.Fatalf("round %d: the promoted transcript (%d bytes) is not a prefix of what was staged", round, len(got))
		}
		checkDescribed(t, s, root, testKey)
	}
}
