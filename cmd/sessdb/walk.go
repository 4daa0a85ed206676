package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
	"sessdb/internal/shellquote"
)

// clock is the CLI's clock; golden tests fix it.
var clock = time.Now

// interruptContext returns a context that ends at the first Ctrl-C,
// SIGTERM or SIGHUP; tests replace it. A closed terminal (SIGHUP) under an
// operator's long reap or migration stops it as Ctrl-C does, rather than
// killing it as a crash would, midway with nothing reported; a SIGHUP the
// process was started ignoring (nohup) stays ignored. After the first
// signal the default action is restored, so a second one kills a walk
// that is slow to stop.
var interruptContext = func() (context.Context, context.CancelFunc) {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// progress writes "label done/total" over itself on stderr, at most ten
// times a second, and only when stderr is a terminal: a log file or a pipe
// gets no carriage returns.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	last  time.Time
	shown bool
}

// progressTo returns a progress line on stderr, or nil when stderr is not
// a terminal (unless forced, for tests) or every stderr line must be JSON.
func progressTo(inv *invocation, label string) *progress {
	if inv.rep.json || !isTerminal(inv.stderr) && !forceProgress {
		return nil
	}
	return &progress{w: inv.stderr, label: label}
}

var forceProgress bool

// report is the callback for the store's walks; nil when p is nil, so the
// store skips it.
func (p *progress) report() func(done, total int) {
	if p == nil {
		return nil
	}
	return func(done, total int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if now := time.Now(); done == total || now.Sub(p.last) >= 100*time.Millisecond {
			p.last = now
			p.shown = true
			fmt.Fprintf(p.w, "\r%s %d/%d", p.label, done, total)
		}
	}
}

// clear erases the progress line before anything else goes to stderr.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", len(p.label)+24))
		p.shown = false
	}
}

// printable escapes what a terminal would act on rather than show: C0 and
// C1 control characters, DEL, Unicode format characters (bidirectional
// overrides, zero-width characters), line and paragraph separators, and
// bytes that are not UTF-8. Names under a sessions root, stamps and error
// texts come from files anyone with write access to the root could have
// made, so every one of them goes through it on its way to a text report;
// JSON output escapes them itself. Newline, carriage return and tab show
// as \n, \r and \t, other bytes below 0x80 as \xNN, runes as \uNNNN.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unprintable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unprintable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unprintable(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// geteuid is the user a walk runs as; tests replace it.
var geteuid = os.Geteuid

// checkWalkRoot refuses a sessions root that no walk (dump, check, reap,
// migrate) should descend, before anything under it is read:
//
//   - the filesystem root, however it is spelled ("/", "/.", a link to
//     it): PI_SESSIONS_DIR=/ is a mistake, and a walk of it reads every
//     file system on the host;
//   - a directory anyone may write to without the sticky bit (mode o+w,
//     no +t): anyone can rename or replace its entries under the walk;
//   - a directory owned by a user other than the one running sessdb or
//     root, unless sessdb runs as root (an operator auditing the worker's
//     root): that user controls everything the walk reads.
//
// A root whose links cannot be resolved into one path (fsat.ResolvedPath:
// they lead past PATH_MAX, a relative root's working directory is gone)
// is refused too: where it leads cannot be told. A root that does not
// exist or is not a directory is left to the walk, which reports it as it
// always has.
func checkWalkRoot(dir string) error {
	return checkWalkDir("sessions root", "point DIR or PI_SESSIONS_DIR at the sessions directory", dir)
}

// judgeJobDir judges, for a job's command (resolve, promote), a sessions
// root or a fleet's transcripts dir, dir, with its links resolved once;
// name is the flag or variable that gave it, what says which it is.
//
// The filesystem root, however spelled ("/", "/.", a link to it), is
// refused, as every walk refuses it: a job's key made there ("$STATE/"
// with STATE unset) was a directory in "/" that no dump, check or reap
// could reach, so no TTL ever removed it.
//
// One anyone may write to without the sticky bit (openToAnyone; see
// checkWalkDir) gets a warning: every walk refuses it, so its keys are
// never reaped, checked or dumped until it is mended, which chmod +t does
// in place; refusing it here would stop a deployment that works (the read
// path fails closed only where no root is set, or it is the filesystem
// root).
//
// A dir missing, or whose links cannot be resolved, is neither: the
// command says what it finds.
func judgeJobDir(name, what, dir string) (warning string, err error) {
	real, rerr := fsat.ResolvedPath(dir)
	switch {
	case rerr != nil:
		return "", nil
	case real == "/":
		return "", fmt.Errorf("%s: the %s %s is the filesystem root, which no dump, check or reap walks (its keys would never expire): point it at a directory of its own (is a variable in it unset?)", name, what, quoteName(dir))
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || !openToAnyone(&st) {
		return "", nil
	}
	return fmt.Sprintf("%s: the %s %s is writable by anyone (mode %#o, no sticky bit): dump, stats, check, reap and migrate refuse to walk it, so no reap expires its keys; %s", name, what, quoteName(dir), st.Mode&0o7777, stickyMend(real)), nil
}

// openToAnyone reports whether st, a directory's, lets anyone rename or
// replace its entries: writable by others (o+w) without the sticky bit.
func openToAnyone(st *unix.Stat_t) bool {
	return st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0
}

// stickyMend is the mend of real, a directory anyone may write to without
// the sticky bit (openToAnyone), as the job's warning and the walk's
// refusal both say it: on the directory a link leads to, in place, as a
// command line to paste (the dir one shell word: Go's quoting left "$1",
// "`...`" or "$(...)" in a name, which a root through a link may hold, to
// the shell).
func stickyMend(real string) string {
	return fmt.Sprintf("chmod +t %s (or chmod o-w) mends it in place", shellquote.Word(real))
}

// checkWalkDir is checkWalkRoot for any directory a walk descends (a
// fleet's transcripts dir too): what names it in a refusal, and fix says
// where to point it instead of the filesystem root.
func checkWalkDir(what, fix, dir string) error {
	// As the walk's open takes it: "link/.." is the parent of the link's
	// target, which a path cleaned first would not say.
	real, err := fsat.ResolvedPath(dir)
	if err != nil {
		return fmt.Errorf("%s %s: where it leads cannot be told (%v): refusing to walk it", what, quoteName(dir), err)
	}
	if real == "/" {
		return fmt.Errorf("%s %s is the filesystem root: refusing to walk it (%s)", what, quoteName(dir), fix)
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	if openToAnyone(&st) {
		// The job's warning gave the mend and the walk's refusal did
		// not: an operator the refusal stopped had to find it.
		return fmt.Errorf("%s %s is writable by anyone (mode %#o, no sticky bit): refusing to walk it; %s", what, quoteName(dir), st.Mode&0o7777, stickyMend(real))
	}
	if euid := geteuid(); euid != 0 && int(st.Uid) != euid && st.Uid != 0 {
		return fmt.Errorf("%s %s is owned by uid %d, not by this user (uid %d) or root: refusing to walk it", what, quoteName(dir), st.Uid, euid)
	}
	return nil
}
