package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// exitInterrupted is the status of a walk stopped by Ctrl-C (or SIGTERM):
// 128+SIGINT, as a shell reports a process the signal killed, so a script
// tells "stopped on request, partial output" from a fault (1) and from
// "problems found" (3).
const exitInterrupted = 130

// exitTable is the exit status table the walking commands print with -h.
const exitTable = `exit status:
  0    done (check: nothing wrong)
  1    a fault (an I/O error, a root that cannot be read)
  2    a usage or configuration error
  3    check: problems found (with --repair: problems that remain)
  130  interrupted (Ctrl-C or SIGTERM): what was done so far was printed`

// clock is the CLI's clock; golden tests fix it.
var clock = time.Now

// interruptContext returns a context that ends at the first Ctrl-C or
// SIGTERM; tests replace it. After the first signal the default action is
// restored, so a second Ctrl-C kills a walk that is slow to stop.
var interruptContext = func() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// setUsage makes -h print the command's usage, an example and the exit
// statuses before the flags.
func setUsage(fs *flag.FlagSet, name, example string, stderr io.Writer) {
	fs.Usage = func() {
		if c := lookup(name); c != nil {
			fmt.Fprintf(stderr, "usage: sessdb %s\n\n%s\n\n", c.usage, c.short)
		}
		fmt.Fprintf(stderr, "example:\n%s\n\n%s\n\nflags:\n", example, exitTable)
		fs.PrintDefaults()
	}
}

// parseFlags parses args, and maps -h to a successful exit (the usage was
// asked for) and any other flag error to a usage error. ok is false when
// the command should return code at once.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	}
	return exitUsage, false // the flag package has printed the error
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
// a terminal (unless forced, for tests).
func progressTo(stderr io.Writer, label string) *progress {
	if !isTerminal(stderr) && !forceProgress {
		return nil
	}
	return &progress{w: stderr, label: label}
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

// walkEnd reports how a walk ended and returns the exit status for it:
// interrupted (with how far it got), a fault, or ok.
func walkEnd(stderr io.Writer, cmd string, err error, done int) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "sessdb %s: interrupted after %d entries; the output above covers those\n", cmd, done)
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "sessdb %s: %v\n", cmd, err)
	return exitFault
}
