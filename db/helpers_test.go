package db

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/quietexit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// Every test closes what it opens; a leftover entry is a leaked lock.
	if n := keyLockCount(); n != 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "in-process lock table holds %d entries after all tests\n", n)
		code = 1
	}
	quietexit.Exit(code) // a passing run ends without the race detector's second
}

// keyDir is a temporary key directory, opened the way the store opens one.
type keyDir struct {
	dir  *os.File
	path string // the directory
	db   string // path of meta.db, the display name
}

func newKeyDir(t testing.TB) keyDir {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	return openKeyDir(t, path)
}

func openKeyDir(t testing.TB, path string) keyDir {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open key dir: %v", err)
	}
	kd := keyDir{dir: os.NewFile(uintptr(fd), path), path: path, db: filepath.Join(path, FileName)}
	t.Cleanup(func() { kd.dir.Close() })
	return kd
}

// testOpts keeps lock waits short so that a test that times out by design
// does not take seconds.
var testOpts = Options{LockTimeout: 500 * time.Millisecond}

// mustOpen opens a DB and, like bbolt's btesting, checks the file's
// consistency with bbolt's Check when the test ends, then closes it.
func mustOpen(t testing.TB, kd keyDir, write bool) *DB {
	t.Helper()
	open := OpenReader
	if write {
		open = OpenWriter
	}
	d, err := open(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatalf("open (write=%v): %v", write, err)
	}
	t.Cleanup(func() {
		d.mu.RLock()
		healthy := !d.closed && d.poison.Load() == nil
		d.mu.RUnlock()
		if healthy {
			if problems, err := d.Check(100); err != nil || len(problems) > 0 {
				t.Errorf("bbolt check of %s: %v %v", kd.db, problems, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

// populate writes every sidecar and n history entries, one transaction.
func populate(t testing.TB, d *DB, n int) {
	t.Helper()
	err := d.Update(func(tx *Tx) error {
		return errors.Join(
			tx.PutTranscript(Transcript{Gen: 7, Size: 1234, CRC32C: 0xdeadbeef, PromotedAt: 1700000000e9}),
			tx.PutPiVersion("0.54.2"),
			tx.PutVenue("local"),
			tx.PutResumeChain(3),
			tx.PutContext(&Context{Tokens: 150000, Window: 200000, Model: "anthropic/claude"}),
			tx.PutPending(&Pending{Tmp: ".current.jsonl.tmp-abc", Size: 99, CRC32C: 42, Gen: 8}),
			appendN(tx, 1, n),
		)
	})
	if err != nil {
		t.Fatalf("populate: %v", err)
	}
}

func appendN(tx *Tx, from, n int) error {
	for g := from; g < from+n; g++ {
		_, err := tx.AppendHistory(HistoryEntry{Gen: uint64(g), At: int64(g) * 1e9, Resumed: g%2 == 0,
			Reason: "resumed", Bytes: int64(g) * 100, Chain: uint64(g % 5), Job: fmt.Sprintf("job-%d", g)})
		if err != nil {
			return err
		}
	}
	return nil
}

// appended drops the sequence number AppendHistory returns, for writes
// joined with errors.Join.
func appended(_ uint64, err error) error { return err }

// makeDB builds a populated meta.db in a new key dir and closes it.
func makeDB(t testing.TB, history int) keyDir {
	t.Helper()
	kd := newKeyDir(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, d, history)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return kd
}

const childEnv = "SESSDB_DB_TEST_CHILD"

// inChild runs body in a re-executed test binary. A guard that regresses
// would let bbolt kill the process (SIGBUS, SIGSEGV, an unrecovered panic);
// in a child that fails this test instead of ending the whole test binary.
func inChild(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	switch os.Getenv(childEnv) {
	case t.Name():
		body(t)
		return
	case "":
	default:
		// A child runs one test; one that -test.run happens to match as
		// well must not spawn children of its own.
		t.Skip("another test's child process")
	}
	out, err := runChild(t, nil, nil)
	if err != nil {
		t.Fatalf("child %s: %v\n%s", t.Name(), err, out)
	}
}

// runChild re-executes the test binary to run only the current test, with
// childEnv set to its name and extra environment added.
func runChild(t *testing.T, env []string, configure func(*exec.Cmd)) ([]byte, error) {
	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	// The child may take what is left of the parent's time (the long runs
	// of .ci/long pass -timeout), and at least two minutes.
	timeout := 2 * time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = max(timeout, time.Until(dl)-10*time.Second)
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	// The race detector sleeps a second at exit by default.
	// A child that dies by design (SIGBUS) never removes its temp dirs:
	// they go under this test's, which is removed.
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.Name(), "GORACE=atexit_sleep_ms=0", "TMPDIR="+t.TempDir()), env...)
	if configure != nil {
		configure(cmd)
		return nil, cmd.Start()
	}
	out, err := cmd.CombinedOutput()
	if err == nil && !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		err = errors.New("the child did not run the test")
	}
	return out, err
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirState is what "changes nothing" compares: every name in the key dir
// with its bytes and mtime.
func dirState(t testing.TB, kd keyDir) string {
	t.Helper()
	ents, err := os.ReadDir(kd.path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(kd.path, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s mode=%o size=%d mtime=%d.%09d", e.Name(), st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			fmt.Fprintf(&b, " sha256=%x", sha256.Sum256(readFile(t, filepath.Join(kd.path, e.Name()))))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

// keyLockCount is the size of the table, for tests that check it drains.
func keyLockCount() int {
	keyLocks.Lock()
	defer keyLocks.Unlock()
	return len(keyLocks.m)
}
