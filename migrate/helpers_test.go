package migrate

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/quietexit"
)

// The crash and concurrency tests run migrations in a re-exec'd copy of
// this test binary. TestMain checks childEnv before anything else, and a
// child never reaches m.Run and never starts a process: it cannot fork
// again (an earlier helper's test once fork-bombed the machine).
const childEnv = "SESSDB_MIGRATE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	quietexit.Children()    // a child that exits on its own does so without the race detector's second
	quietexit.Exit(m.Run()) // and a passing run ends without the race detector's second of its own
}

// TestMain has the children this package's tests start, and the
// processes those start in turn, exit without the race detector's sleep:
// GORACE in the tests' environment, which they inherit, sets
// atexit_sleep_ms (internal/quietexit).
func TestChildrenInheritNoExitSleep(t *testing.T) {
	if !strings.Contains(" "+os.Getenv("GORACE"), " atexit_sleep_ms=") {
		t.Fatalf("GORACE=%q: the children of a race build sleep 1 s as they exit", os.Getenv("GORACE"))
	}
}

// runChild migrates SESSDB_ROOT in direction mode ("to-db" or
// "to-legacy"), printing "ready", then one JSON report per line. With
// SESSDB_KILL_AT it SIGKILLs itself at the first call of that fault point;
// with SESSDB_KILL_NTH at the nth fault call of any point; with
// SESSDB_WAIT it reads a line from stdin before it starts.
func runChild(mode string) int {
	opts := Options{Now: func() time.Time { return testNow }, LockTimeout: 20 * time.Second}
	opts.Workers, _ = strconv.Atoi(os.Getenv("SESSDB_WORKERS"))
	at := faults.Point(os.Getenv("SESSDB_KILL_AT"))
	nth, _ := strconv.Atoi(os.Getenv("SESSDB_KILL_NTH"))
	var calls atomic.Int64
	faults.Set(migrateOnly(func(p faults.Point) error {
		if n := calls.Add(1); p == at || n == int64(nth) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}))
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	if os.Getenv("SESSDB_WAIT") != "" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	run := ToDB
	if mode == "to-legacy" {
		run = ToLegacy
	}
	enc := json.NewEncoder(out)
	_, err := run(os.Getenv("SESSDB_ROOT"), opts, func(r Report) error { return enc.Encode(r) })
	out.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a started child process.
type child struct {
	cmd   *exec.Cmd
	out   *bufio.Scanner
	stdin interface{ Close() error }
}

// startChild re-execs this test binary as a child; it refuses to run inside
// a child, whatever the caller.
func startChild(t testing.TB, mode, root string, env ...string) *child {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		panic("a migrate test child must never start a process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A child killed by design never removes its temp dirs: they go
	// under this test's, which is removed.
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode, "SESSDB_ROOT=" + root, "TMPDIR=" + t.TempDir()}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	c := &child{cmd: cmd, out: bufio.NewScanner(out), stdin: stdin}
	c.out.Buffer(nil, 1<<20)
	if !c.out.Scan() || c.out.Text() != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child %s did not start: %q", mode, c.out.Text())
	}
	return c
}

// reports reads the child's reports to EOF and waits for it; killed says
// whether it died of SIGKILL.
func (c *child) reports(t testing.TB) (rs []Report, killed bool) {
	t.Helper()
	var lines [][]byte
	for c.out.Scan() {
		lines = append(lines, append([]byte(nil), c.out.Bytes()...))
	}
	err := c.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if err != nil && !killed {
		t.Fatalf("child: %v", err)
	}
	for i, l := range lines {
		var r Report
		if err := json.Unmarshal(l, &r); err != nil {
			if killed && i == len(lines)-1 {
				break // killed while it wrote the line
			}
			t.Fatalf("child wrote %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs, killed
}

func testOpts() Options {
	return Options{Now: func() time.Time { return testNow }, LockTimeout: 10 * time.Second}
}

// migrate runs a direction in-process and returns the reports by key.
func migrate(t testing.TB, root string, toLegacy bool, opts Options) (map[string]Report, Summary) {
	t.Helper()
	run := ToDB
	if toLegacy {
		run = ToLegacy
	}
	got := map[string]Report{}
	sum, err := run(root, opts, func(r Report) error {
		if _, dup := got[r.Key]; dup {
			t.Errorf("%s reported twice", r.Key)
		}
		got[r.Key] = r
		return nil
	})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return got, sum
}

// dbValues reads a key dir's meta.db; ok is false when it has none.
func dbValues(t testing.TB, dir string) (sc db.Sidecars, ok bool) {
	t.Helper()
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	d, err := db.OpenReader(kd, filepath.Join(dir, db.FileName), db.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		if os.IsNotExist(err) {
			return sc, false
		}
		t.Fatal(err)
	}
	defer d.Close()
	must(t, d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }))
	return sc, true
}

// treeState describes every entry under root without following links: its
// type, a hash of a file's bytes, a link's target; with times, every mtime
// (directories too). meta.db is described by its sidecars unless raw, since
// its pages hold its creation time.
func treeState(t testing.TB, root string, times, raw bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		desc := fmt.Sprintf("%s %o", fsat.Kind(&st), st.Mode&0o7777)
		switch {
		case d.Name() == db.FileName && !raw:
			sc, _ := dbValues(t, filepath.Dir(p))
			desc += " " + fmtSidecars(sc)
		case fsat.IsRegular(&st):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		case d.Type()&fs.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			desc += " -> " + to
		}
		if times {
			desc += fmt.Sprintf(" mtime %d", time.Unix(st.Mtim.Unix()).UnixNano())
		} else if d.Name() == "current.jsonl" && fsat.IsRegular(&st) {
			desc += fmt.Sprintf(" mtime %d", time.Unix(st.Mtim.Unix()).UnixNano()) // the legacy clock
		}
		out[rel] = desc
		return nil
	})
	must(t, err)
	return out
}

func fmtSidecars(sc db.Sidecars) string {
	s := fmtValues(valuesOf(sc))
	if t := sc.Transcript; t != nil {
		s += fmt.Sprintf(" gen=%d size=%d crc=%d at=%d", t.Gen, t.Size, t.CRC32C, t.PromotedAt)
	}
	if sc.Pending != nil {
		s += " pending"
	}
	if sc.PiVersion == nil {
		s += " pi-absent"
	}
	return s
}

// diffStates lists the paths where two tree states differ.
func diffStates(a, b map[string]string) string {
	var out []string
	for p, v := range a {
		if b[p] != v {
			out = append(out, fmt.Sprintf("%s:\n\t%s\n\t%s", p, v, b[p]))
		}
	}
	for p, v := range b {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%s:\n\t(none)\n\t%s", p, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func osMkdir(p string) error { return os.Mkdir(p, 0o700) }

func lstat(p string) (os.FileInfo, error) { return os.Lstat(p) }

// migrateOnly passes f migrate's own fault points only: the store's
// protocols, which migrate and the tests' checks call, reach the same
// process-wide hook.
func migrateOnly(f func(faults.Point) error) func(faults.Point) error {
	return func(p faults.Point) error {
		if !strings.HasPrefix(string(p), "to-db/") && !strings.HasPrefix(string(p), "to-legacy/") {
			return nil
		}
		return f(p)
	}
}
