package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// Config says where a fleet's records and transcripts live.
type Config struct {
	// Config is how etcd is reached and under which prefix the records
	// live (see etcdmeta.Config; its zero values are safe defaults).
	etcdmeta.Config
	// TranscriptsDir is the directory every worker mounts for the
	// transcripts; it must exist. A relative path is made absolute.
	TranscriptsDir string
	// Logger receives what a verdict does not say: the etcd error behind
	// a store-unavailable, the I/O error behind a lost generation. The
	// zero Logger writes nothing.
	Logger zerolog.Logger
	// Now is the wall clock a promotion's and a migration's commit window
	// is also judged by (a suspended host advances no other): the store's
	// clock (store.Options.Now). nil means time.Now.
	Now func() time.Time
}

// Backend is a fleet's store.Backend. It is safe for concurrent use by
// many goroutines, and many processes on many hosts may use the same
// fleet at once.
type Backend struct {
	meta    *etcdmeta.Store
	dir     string
	timeout time.Duration
	log     zerolog.Logger
	now     func() time.Time
	// hook, set by this package's tests only, is called at each named
	// step (the hook* constants) of key; an error it returns is that
	// step's.
	hook func(point, key string) error
	// held, set by this package's tests only, is given the lost channel
	// of each lock of key that lock takes: a holder learns that its
	// lease ended at its next keep-alive, not at a step of its own, and
	// a test that ends the lease waits on it before it lets the holder
	// go on.
	held func(key string, lost <-chan struct{})
	// serverNow reads the transcripts dir's file server's clock; nil is
	// shared.ServerNow. Set by this package's tests only, to stand in for
	// a server whose clock is behind.
	serverNow func(dir string) (time.Time, error)
	// localNow is this host's clock as fileBehind reads it; nil is
	// time.Now. Set by this package's tests only, to stand in for a
	// reaper paused while it reads the server's clock.
	localNow func() time.Time
	// stale remembers bases found superseded (see Begin).
	stale staleRevs
	// landedLate counts commits found landed by a later try after their
	// answer was lost (for the fault tests' figures).
	landedLate atomic.Int64
	// claimed is set once the transcripts dir was found this fleet's (see
	// Claim); claiming lets one caller look at a time.
	claimed  atomic.Bool
	claiming sync.Mutex
	// matched is set once an audit found the dir's mark this fleet's
	// (claimed is a writer's: the mark made durable too).
	matched atomic.Bool
}

// The steps a test can fail or stall (Backend.hook).
const (
	hookOpen           = "resolve/before-open"   // the record read, its file not yet opened
	hookHeader         = "generation/header"     // a generation file opened, its first line not yet read (resolve, dump)
	hookSource         = "resolve/source"        // the file opened, the copy not begun
	hookStage          = "promote/before-stage"  // the record and history read
	hookCommit         = "promote/before-commit" // the file written
	hookAfterCommit    = "promote/after-commit"  // the record committed
	hookRefuse         = "promote/before-refuse" // a refusal decided, its history entry not yet sent
	hookReapDelete     = "reap/before-delete"    // the lock held, the key judged expired
	hookSweep          = "reap/before-sweep"     // a file judged an orphan again, not yet removed
	hookRepair         = "check/before-repair"   // orphans judged from the snapshot, the lock not yet taken
	hookRepairHeld     = "check/repair-held"     // the lock held, the record not yet read again
	hookRepairAlone    = "check/repair-alone"    // the lock held, the history read again did not decode, the record not yet read alone
	hookRepairLocked   = "check/repair-locked"   // the lock held, the record read again, no orphan removed yet
	hookCheckEntry     = "check/entry"           // an entry of the walk (a record or a name in the dir), nothing of it read
	hookCheckDir       = "check/key-dir"         // a key's directory lstat'ed, not yet opened
	hookCheckDirListed = "check/key-dir-listed"  // a key's directory listed, its entries not yet looked at
	hookCheckOpen      = "check/before-open"     // a record read again, its generation not yet opened
	hookVerify         = "generation/verify"     // a generation opened, not yet verified (check, dump --verify; an error: its reads fail)
	hookUnmarked       = "claim/unmarked"        // a writer's claim found no mark, the dir's key dirs not yet looked at
	hookMigrateCopy    = "migrate/before-copy"   // --to etcd: a key dir read under its lock, its transcript not yet copied; --from etcd: the key judged under its lock, the generation not yet copied into its temp
	hookMigrateRead    = "migrate/before-read"   // --to/--from etcd: a key's record and history not yet read from etcd
	hookListed         = "list/record"           // dump: a record listed, not yet passed on to the walk
	hookHistoryListed  = "list/history"          // dump: a history's name listed, not yet merged (an error: the histories' listing fails there)
)

func (b *Backend) at(point, key string) error {
	if b.hook == nil {
		return nil
	}
	return b.hook(point, key)
}

// Open validates cfg and connects to etcd (see etcdmeta.Open: without a
// user name nothing waits for etcd here). The transcripts dir must be a
// directory (else ErrNoTranscriptsDir: missing, not a directory, not
// searchable); a stat of it that fails otherwise (ESTALE, EIO, ENOTCONN)
// is the storage failing, not the configuration: shared.ErrDirUnavailable,
// on which Unreachable builds a Backend whose resolves are
// store-unavailable.
func Open(cfg Config) (*Backend, error) {
	dir, err := transcriptsDir(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := etcdmeta.Open(cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := checkPrefix(meta.Prefix()); err != nil {
		meta.Close()
		return nil, err
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = etcdmeta.DefaultRequestTimeout
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Backend{meta: meta, dir: dir, timeout: timeout, log: cfg.Logger, now: now}, nil
}

// transcriptsDir is cfg's transcripts dir, absolute and its links
// resolved (fsat.ResolvedPath), once it is known to be a directory.
// Cleaned alone (filepath.Abs, before 2026-12-06), "link/../transcripts"
// named the link's own directory's "transcripts", another directory than
// the one the system reaches, and every file of the fleet went there.
func transcriptsDir(cfg Config) (string, error) {
	if cfg.TranscriptsDir == "" {
		return "", fmt.Errorf("fleet open: %w: TranscriptsDir is empty", ErrNoTranscriptsDir)
	}
	dir, err := fsat.ResolvedPath(cfg.TranscriptsDir)
	var fi os.FileInfo
	if err == nil {
		fi, err = statTranscriptsDir(dir)
	} else {
		// A part of the path that cannot be looked at, or a relative
		// path whose working directory is gone: judged as a stat's error.
		dir, err = cfg.TranscriptsDir, &os.PathError{Op: "resolve", Path: cfg.TranscriptsDir, Err: err}
	}
	switch {
	case err == nil && !fi.IsDir():
		return "", fmt.Errorf("fleet open %s: %w: not a directory", dir, ErrNoTranscriptsDir)
	case err == nil:
		return dir, nil
	case wrongPath(err):
		return "", fmt.Errorf("fleet open %s: %w: %w", dir, ErrNoTranscriptsDir, err)
	}
	// Not the configuration: the storage failing (an export that went
	// away, ESTALE; a soft mount whose server stopped answering, EIO; a
	// FUSE mount whose daemon died, ENOTCONN).
	return "", fmt.Errorf("fleet open: %w: %w", shared.ErrDirUnavailable, err)
}

// statTranscriptsDir is os.Stat of the transcripts dir, behind the fault
// point a test stands in for a stale export with (faults.SharedDirStat).
func statTranscriptsDir(dir string) (os.FileInfo, error) {
	if err := faults.At(faults.SharedDirStat); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return os.Stat(dir)
}

// wrongPath reports whether a stat of the transcripts dir failed for
// what a configuration gets wrong: a path that does not exist, runs
// through a file or too many links, is too long, or may not be searched.
func wrongPath(err error) bool {
	for _, e := range []error{fs.ErrNotExist, fs.ErrPermission, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errNotOpened is every method's answer on a Backend Open did not make.
var errNotOpened = fmt.Errorf("fleet: the Backend was not made by fleet.Open: %w", store.ErrNoBackend)

// opened returns errNotOpened (store.ErrNoBackend) for a Backend Open did
// not make: a zero one (a struct field never set), or the nil one Open
// returns with its error. It has no etcd client to ask and no transcripts
// dir: a method that went on would panic on the one, or judge "", the
// working directory, as the other (a stat of "" is ENOENT, which read as
// shared.ErrDirUnavailable, the storage failing, where the caller's code
// is at fault, and sent IsUnreachable's callers to Unreachable).
func (b *Backend) opened() error {
	if b == nil || b.meta == nil {
		return errNotOpened
	}
	return nil
}

// Close closes the etcd client. A Backend is unusable after it: Resolve
// and Promote on it are faults ("store closed"), never a verdict. Closing
// it again, closing the nil Backend Open returns with its error (a
// deferred Close before the error is looked at), or closing a zero
// Backend (one Open did not make: a struct field never set), does
// nothing. Every other method of such a Backend, and ToEtcd and FromEtcd
// given one, returns store.ErrNoBackend (Dir returns ""), touching
// nothing: a store made on it (store.NewOn) answers store.ErrNoBackend
// as one made on no backend does, once the arguments it checks first
// pass (an invalid key, an empty job dir, a Session Promote refuses are
// said as such first; a store made on no backend, or on the nil
// Backend, says store.ErrNoBackend before it looks at them).
func (b *Backend) Close() error {
	if b.opened() != nil {
		return nil
	}
	return b.meta.Close()
}

// Dir is the absolute transcripts dir; "" for a Backend Open did not
// make.
func (b *Backend) Dir() string {
	if b == nil {
		return ""
	}
	return b.dir
}

// ID names the fleet's data for a ticket: the transcripts dir and the
// etcd prefix, as "<dir> (etcd prefix <prefix>)". It begins with the
// absolute dir, as a ticket's root must. A dir that is not valid UTF-8
// has none (store.ErrRootNotUTF8), as a sessions root that is not: the
// ticket names it as JSON text, which would carry it back as another
// name, and every promote of the job would be store.ErrWrongRoot.
func (b *Backend) ID() (string, error) {
	if err := b.opened(); err != nil {
		return "", err
	}
	return checkedID(b.dir, b.meta.Prefix())
}

func id(dir, prefix string) string { return dir + idSep + prefix + ")" }

// checkedID is id, refused (store.ErrRootNotUTF8) where dir is not valid
// UTF-8; the prefix is etcdmeta's, which refuses one that is not.
func checkedID(dir, prefix string) (string, error) {
	if !utf8.ValidString(dir) {
		return "", fmt.Errorf("%w: the transcripts dir %q", store.ErrRootNotUTF8, dir)
	}
	return id(dir, prefix), nil
}

const idSep = " (etcd prefix "

// checkPrefix refuses a prefix that holds the ID's separator: the ID
// would no longer say where the dir ends and the prefix begins, and two
// fleets (a dir ending in the separator and what follows, and a prefix
// beginning with it) could have one ID and take each other's tickets.
func checkPrefix(prefix string) error {
	if strings.Contains(prefix, idSep) {
		return &etcdmeta.ConfigError{Field: "Prefix", Detail: fmt.Sprintf("%q holds %q, which a fleet's ID puts between its dir and its prefix", prefix, idSep)}
	}
	return nil
}

// SameID reports whether id names this fleet: the same etcd prefix, and
// the same transcripts dir however spelled (a link, a bind mount).
func (b *Backend) SameID(other string) (bool, error) {
	if err := b.opened(); err != nil {
		return false, err
	}
	return sameID(b.dir, b.meta.Prefix(), other), nil
}

// sameID reports whether other names the fleet of dir and prefix.
func sameID(dir, prefix, other string) bool {
	if other == id(dir, prefix) {
		return true
	}
	i := strings.LastIndex(other, idSep)
	if i < 0 || !strings.HasSuffix(other, ")") || other[i+len(idSep):len(other)-1] != prefix {
		return false
	}
	a, aerr := os.Stat(dir)
	o, oerr := os.Stat(other[:i])
	return aerr == nil && oerr == nil && os.SameFile(a, o)
}

// deadline is a context that ends the request timeout from now: the
// budget of one step, retries included.
func (b *Backend) deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.timeout)
}

// readIn runs a read, again after a backoff while etcd is unavailable (a
// member stopping, a leader election), within the request timeout and ctx
// (context.Background() where the caller has none; a walk's, which Ctrl-C
// ends): a read changes nothing, so a retry cannot do harm, and a resolve
// that gives up is a cold start whose job's work cannot be promoted. A
// read that a leader change overtook fails at once (etcd's client retries
// a plain Get, never the transaction Get reads a record and its history
// in), and without the retry a single election stopped a walk of every
// key.
func (b *Backend) readIn(ctx context.Context, key string, get func(context.Context, string) (etcdmeta.State, error)) (etcdmeta.State, error) {
	c, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return readWithin(c, key, get)
}

// lock takes key's lock for a walk (reap, repair), again after a backoff
// while etcd is unavailable, within the request timeout and ctx: the
// lock's own transaction fails at once when a leader change overtakes it,
// as a read's does (readIn). A try that failed took nothing: Lock revokes
// its lease, and with it any waiter's key it wrote. Each try is given ctx,
// not the bounded context: Lock bounds its own requests, and its wait for
// a holder is LockWait, longer than the request timeout by default; cut
// short by the bounded context, a key held for the whole wait read as
// etcd unavailable (which stops a reap) instead of locked.
func (b *Backend) lock(ctx context.Context, key string) (unlock func(), lost <-chan struct{}, err error) {
	c, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	for try := 0; ; try++ {
		unlock, lost, err = b.meta.Lock(ctx, key)
		if err == nil && b.held != nil {
			b.held(key, lost)
		}
		if !errors.Is(err, etcdmeta.ErrUnavailable) || !etcdmeta.Backoff(c, try) {
			return unlock, lost, err
		}
	}
}

// readWithin is read within ctx: a step that reads more than once shares
// one request timeout between its reads.
func readWithin(ctx context.Context, key string, get func(context.Context, string) (etcdmeta.State, error)) (st etcdmeta.State, err error) {
	err = untilAnswered(ctx, func(ctx context.Context) (err error) {
		st, err = get(ctx, key)
		return err
	})
	return st, err
}

// untilAnswered runs ask, again after a backoff while etcd is
// unavailable, until ctx ends: for a read, or a write that lands once
// however often it is sent.
func untilAnswered(ctx context.Context, ask func(context.Context) error) error {
	for try := 0; ; try++ {
		err := ask(ctx)
		if !errors.Is(err, etcdmeta.ErrUnavailable) || !etcdmeta.Backoff(ctx, try) {
			return err
		}
	}
}

// callersEnd is a walk's error err as its caller gets it: ctx's own
// error, as it is, when ctx has ended and err is of that end. An etcd
// request the caller's deadline cut short is otherwise wrapped as
// etcdmeta.ErrUnavailable (the walk's request timeout, a child of ctx,
// ends with the same context.DeadlineExceeded), and a Go caller would
// take its own deadline for etcd's silence.
func callersEnd(ctx context.Context, err error) error {
	if cerr := stopped(ctx, err); cerr != nil {
		return cerr
	}
	return err
}

// stopped is ctx's error when err is of ctx's end (the caller's cancel or
// deadline), else nil: an etcd request the caller's deadline cut short is
// also etcdmeta.ErrUnavailable, and a repair note saying "etcd
// unavailable" would send the operator looking for an outage (as
// callersEnd tells a walk's error).
func stopped(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	return nil
}

// staleRevs remembers, per key, the newest revision a commit or a refusal
// found superseded: a base at or below it is read, not trusted. Revisions
// only grow, so a mark never becomes wrong; forgetting one (the map is
// bounded) costs one more lost compare.
type staleRevs struct {
	mu sync.Mutex
	m  map[string]int64
}

// maxStale bounds staleRevs; past it the map starts over.
const maxStale = 4096

func (s *staleRevs) has(key string, rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[key]
	return ok && rev <= r
}

func (s *staleRevs) mark(key string, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxStale {
		s.m = make(map[string]int64)
	}
	if r, ok := s.m[key]; !ok || rev > r {
		s.m[key] = rev
	}
}

var _ store.ContextBackend = (*Backend)(nil)
