// The legacy_*_test.go files are the benchmarks' baseline: the legacy
// file-per-sidecar store's promote, resolve and dump walk
// (../shared/reference/legacy-store.md §2.2, §2.3, §3.2), done with the
// system calls the Node worker made, in its order, so that sessdb is
// compared with what it replaces and not with a strawman or an idealised
// rewrite.
//
// Benchmark-only, so in test files: nothing in the product can import it.
// Its entry points carry "legacy" (legacyPromote, legacyResolve,
// legacyWalk, legacySeed, legacyOptions, legacySidecars), its types are
// ones only it has (Session, Request, Job, Verdict, Result, KeyInfo), and
// its unexported helpers (readSidecar, writeSidecar, rename, ...) are its
// alone; sessdb's own are always reached as store.X. The production reader of legacy key dirs is sessdb/store/legacy;
// its parsers are reused here for the values, so the two judge the same
// bytes the same way.
//
// Where the Go code cannot do exactly what Node did, it errs on the side of
// a faster baseline, so a ratio against it is never flattered:
//
//   - Node's resolve decoded the whole transcript into a JavaScript string
//     before splitting off line 1; this reads the bytes and stops at the
//     first newline, without a decode.
//   - The durable variant fsyncs every file before its rename and the key dir
//     once, at the end: the least a crash-safe version of this protocol can
//     do. The empty lock file is not fsynced (it is removed before
//     legacyPromote returns).
//
// Caveat: it keeps the legacy store's known faults (no lock on the read
// path, shared sidecar temp names); it is a measurement, not a store.

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/fsat"
	slegacy "sessdb/store/legacy"
)

// File names and limits of the legacy layout.
const (
	transcriptName = slegacy.TranscriptName
	lockName       = slegacy.LockName
	stagedDirName  = "session"
	incoming       = ".incoming"
	// lockStale is the legacy LOCK_STALE_MS: a lock older than this is
	// taken over.
	lockStale = time.Hour
)

// legacySidecars lists the four sidecar files, in the order the dump reads them.
var legacySidecars = []string{slegacy.PiVersionName, slegacy.VenueName, slegacy.ResumeChainName, slegacy.ContextName}

// Session is what the legacy resolve handed to the promotion of the same
// job.
type Session struct {
	Resume bool   // the host delivered the key's transcript
	Venue  string // the job's venue; "" leaves the (pending) stamp
	Model  string // normalised provider/model; stamped on the context
}

// Reading is a context measurement a run reported.
type Reading struct{ Tokens, Window int64 }

// Request is what a completed run reports besides its transcript.
type Request struct {
	PiVersion string
	Context   *Reading // nil: the run reported none
}

// legacyOptions are the knobs the legacy store had, plus Durable.
type legacyOptions struct {
	Bounds gates.Bounds
	// Durable fsyncs every file the promotion writes before its rename,
	// and the key dir at the end. The legacy store did neither (§3.4).
	Durable bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o legacyOptions) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Result is a promotion's outcome.
type Result struct {
	Promoted bool
	Reason   gates.Reason
	Bytes    int64
	// SidecarErrors are the post-swap sidecar writes that failed; the
	// legacy store logged and swallowed them.
	SidecarErrors []error
}

// readSidecar is the legacy readSidecar: lstat, a regular file of
// 1..4096 bytes, then readFileSync (open, fstat, read, close), trimmed.
func readSidecar(keyDir, name string) (string, bool) {
	p := filepath.Join(keyDir, name)
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < 1 || st.Size > slegacy.SidecarMaxBytes {
		return "", false
	}
	b, err := readFile(p)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// readVenue is the legacy readVenue: lstat first, ENOENT only is "local".
func readVenue(keyDir string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(keyDir, slegacy.VenueName), &st); err == unix.ENOENT {
		return gates.UnstampedVenue, true
	}
	return readSidecar(keyDir, slegacy.VenueName)
}

func readResumeChain(keyDir string) uint64 {
	v, ok := readSidecar(keyDir, slegacy.ResumeChainName)
	if !ok {
		return 0
	}
	return slegacy.ParseResumeChain(v)
}

// readFile is readFileSync: open, fstat for the size, read it all, close.
func readFile(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, pathErr("fstat", p, err)
	}
	b := make([]byte, st.Size)
	n := 0
	for n < len(b) {
		m, err := fsat.IgnoringEINTR(func() (int, error) { return unix.Read(fd, b[n:]) })
		if err != nil {
			return nil, pathErr("read", p, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return b[:n], nil
}

func pathErr(op, p string, err error) error { return &os.PathError{Op: op, Path: p, Err: err} }
