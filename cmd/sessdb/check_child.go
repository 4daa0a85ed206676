package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/store"
)

// bbolt's full consistency check (store.DeepCheckDB) runs in a child
// process, because damage the pre-check misses can kill the process that
// maps the file (SIGSEGV, SIGBUS, out of memory), and that must not be
// sessdb. The child is sessdb itself, re-executed as
//
//	sessdb check --internal-deep-check ROOT    (with SESSDB_DEEP_CHECK_CHILD=1)
//
// It reads one key per line on stdin and answers each with one JSON line.
// A child is reused for key after key and replaced when it dies or hangs.
// It never starts a child of its own: the check command refuses to spawn
// when its own environment carries the child marker, so a re-execution can
// never recurse, whatever binary it lands in.
const (
	childArg = "--internal-deep-check"
	childEnv = "SESSDB_DEEP_CHECK_CHILD"
)

// childExecutable names the binary to re-execute; tests may replace it.
// /proc/self/exe is the running binary itself, even when an upgrade has
// replaced or removed the file it was started from, so parent and child
// never differ in version.
var childExecutable = func() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// childTestHook, when set, runs in the child before each key; the tests'
// child sets it to crash, hang or exit on chosen keys, or to answer with
// the problems it returns (a check that completed and found damage).
var childTestHook func(key string) (problems []string)

// maxAnswer bounds one line of a check process's output: an answer is a
// key, a few ids and at most maxDeepProblems short lines, and a process
// that writes more without a newline is answering nothing (held whole, a
// line could take all the memory the parent has).
const maxAnswer = 1 << 20

// readyTimeout bounds a check process's start, up to its ready line; tests
// may shorten it.
var readyTimeout = 10 * time.Second

// pipeGrace bounds the wait, once a check process is dead, for the end of
// its stdout and stderr: whatever it started can hold them open for ever.
const pipeGrace = 2 * time.Second

// maxChildDeaths bounds the children one check may lose. Each damaged file
// can kill one, so this is far above any real count, and below a machine
// brought down by a binary that dies at every start.
const maxChildDeaths = 1000

type childAnswer struct {
	Key        string   `json:"key"`
	Problems   []string `json:"problems"`
	Incomplete string   `json:"incomplete,omitempty"`
	DirDev     uint64   `json:"dir_dev,omitempty"` // the key dir checked (store.DeepResult)
	DirIno     uint64   `json:"dir_ino,omitempty"`
	FileDev    uint64   `json:"file_dev,omitempty"` // the meta.db checked
	FileIno    uint64   `json:"file_ino,omitempty"`
}

// runCheckChild is the child's side of the protocol.
func runCheckChild(args []string, stdin io.Reader, stdout io.Writer) int {
	if len(args) != 1 {
		return exitUsage
	}
	st, err := store.New(args[0], store.Options{})
	if err != nil {
		return exitUsage
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	fmt.Fprintln(w, "ready")
	if w.Flush() != nil {
		return exitFault
	}
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		key := in.Text()
		var res store.DeepResult
		if childTestHook != nil {
			res.Problems = childTestHook(key)
		}
		if res.Problems == nil {
			res = st.DeepCheckDB(key)
		}
		if enc.Encode(childAnswer{Key: key, Problems: res.Problems, Incomplete: res.Incomplete, DirDev: res.DirDev, DirIno: res.DirIno, FileDev: res.FileDev, FileIno: res.FileIno}) != nil || w.Flush() != nil {
			return exitFault
		}
	}
	return exitOK
}

// deepChecker is the parent's side: a pool of children, one per worker
// at most, started when first needed.
type deepChecker struct {
	root    string
	timeout time.Duration

	mu     sync.Mutex
	idle   []*checkChild
	deaths int
}

// check runs bbolt's check on key in a child. Only a child that answers
// gives a verdict: problems it found are proof of damage. A child that
// dies or hangs on the key proves nothing (a loaded machine, a SIGSTOP, an
// OOM kill look the same), so the key is tried once more in a fresh child,
// and if that one fails too the result says why, as Incomplete. Only a
// child that cannot be started, or the end of ctx, is an error.
func (d *deepChecker) check(ctx context.Context, key string) (store.DeepResult, error) {
	var causes []string
	for attempt := 0; attempt < 2; attempt++ {
		var c *checkChild
		var err error
		if attempt == 0 {
			c, err = d.take(ctx)
		} else {
			c, err = d.start(ctx) // a fresh process, not a pooled one
		}
		if err != nil {
			return store.DeepResult{}, err
		}
		a, cause, err := c.ask(ctx, key, d.timeout)
		if err != nil {
			return store.DeepResult{}, err
		}
		if cause == "" {
			d.mu.Lock()
			d.idle = append(d.idle, c)
			d.mu.Unlock()
			return store.DeepResult{Problems: a.Problems, Incomplete: a.Incomplete, DirDev: a.DirDev, DirIno: a.DirIno, FileDev: a.FileDev, FileIno: a.FileIno}, nil
		}
		d.mu.Lock()
		d.deaths++
		d.mu.Unlock()
		causes = append(causes, cause)
	}
	return store.DeepResult{Incomplete: causes[0] + "; tried again in a fresh check process: " + causes[1]}, nil
}

func (d *deepChecker) take(ctx context.Context) (*checkChild, error) {
	d.mu.Lock()
	if n := len(d.idle); n > 0 {
		c := d.idle[n-1]
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		return c, nil
	}
	d.mu.Unlock()
	// Started outside the lock: another worker may reuse an idle child
	// meanwhile. At most one child per worker exists, since a worker
	// holds the child it took until its key is answered.
	return d.start(ctx)
}

func (d *deepChecker) start(ctx context.Context) (*checkChild, error) {
	d.mu.Lock()
	deaths := d.deaths
	d.mu.Unlock()
	if deaths >= maxChildDeaths {
		return nil, fmt.Errorf("deep check: %d check processes died; giving up", deaths)
	}
	return startChild(ctx, d.root)
}

// close ends every idle child. A child that is mid-check belongs to a
// check call, which is over by the time the walk returns.
func (d *deepChecker) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.idle {
		c.stop()
	}
	d.idle = nil
}

type checkChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte // closed at the child's end of output, or after a line too long
	long  bool        // a line longer than maxAnswer ended lines (read after lines is closed)
	errs  *headBuffer
}

// startChild starts a check process and waits for its ready line. The end
// of ctx meanwhile kills it and is returned as it is: an interrupt, not a
// process that could not be started.
func startChild(ctx context.Context, root string) (*checkChild, error) {
	if os.Getenv(childEnv) != "" {
		// Inherited, say, by a shell a check process started: named, as
		// nothing else says why check fails.
		return nil, errors.New("deep check: refusing to start a check process from a check process (" + childEnv + " is set in the environment; unset it)")
	}
	exe, err := childExecutable()
	if err != nil {
		return nil, fmt.Errorf("deep check: %w", err)
	}
	cmd := exec.Command(exe, "check", childArg, root)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	// A group of its own keeps the terminal's Ctrl-C for the parent, which
	// stops cleanly; on Linux a death signal also ends a child whose
	// parent is gone (see childProcAttr).
	cmd.SysProcAttr = childProcAttr()
	// Wait, once the child is dead, closes its pipes after this even if
	// something it started still holds their other end.
	cmd.WaitDelay = pipeGrace
	c := &checkChild{cmd: cmd, lines: make(chan []byte, 1), errs: &headBuffer{max: 4 << 10}}
	cmd.Stderr = c.errs
	if c.in, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("deep check: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("deep check: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("deep check: start %s: %w", exe, err)
	}
	go func() {
		defer close(c.lines)
		r := bufio.NewReader(out)
		for {
			line, err := readLine(r, maxAnswer)
			if errors.Is(err, errLineTooLong) {
				c.long = true
			}
			if err != nil {
				return
			}
			c.lines <- line
		}
	}()
	line, st := c.next(ctx, readyTimeout)
	if st == lineCancelled {
		c.kill()
		return nil, ctx.Err()
	}
	if st != lineOK || string(line) != "ready\n" {
		c.kill()
		// Why, first: a start that is only slow (a loaded machine) is
		// told from a binary that is not this sessdb.
		why := fmt.Sprintf("no ready line within %s", readyTimeout)
		switch {
		case st == lineOK:
			why = "it said " + brief(string(bytes.TrimSpace(line)))
		case st == lineEOF:
			why = "it " + exitCause(c.cmd.ProcessState)
		}
		return nil, fmt.Errorf("deep check: %s did not start as a check process (%s): %s", exe, why, c.errs.summary())
	}
	return c, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, its newline included, holding no more than max
// bytes of it: a longer one is errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// ask sends key and waits for the answer. cause is non-empty when the
// child did not answer (it timed out, was killed, exited, or answered
// nonsense): the child is then gone. err is ctx's, when it ended first:
// the child is then killed too (it only reads, so nothing is lost).
func (c *checkChild) ask(ctx context.Context, key string, timeout time.Duration) (a childAnswer, cause string, err error) {
	if _, err := io.WriteString(c.in, key+"\n"); err != nil {
		c.kill()
		return a, fmt.Sprintf("the check process was gone before the check (%v)", err), nil
	}
	line, st := c.next(ctx, timeout)
	switch st {
	case lineCancelled:
		c.kill()
		return a, "", ctx.Err()
	case lineTimeout:
		c.kill()
		return a, fmt.Sprintf("timed out after %s (the check process was killed)", timeout), nil
	case lineEOF:
		c.kill()
		if c.long {
			return a, fmt.Sprintf("the check process answered a line longer than %d MiB", maxAnswer>>20), nil
		}
		return a, fmt.Sprintf("the check process %s: %s", exitCause(c.cmd.ProcessState), c.errs.summary()), nil
	}
	if err := json.Unmarshal(line, &a); err != nil || a.Key != key {
		c.kill()
		if line = bytes.TrimSpace(line); len(line) > 200 {
			line = append(line[:200:200], "..."...)
		}
		return a, fmt.Sprintf("the check process answered %q", line), nil
	}
	return a, "", nil
}

// exitCause says how a check process ended: "killed by signal SIGKILL",
// "exited 2" (a Go runtime crash, SIGBUS or SIGSEGV included, exits 2).
func exitCause(ps *os.ProcessState) string {
	if ps == nil {
		return "ended"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exited %d", ps.ExitCode())
}

type lineState int

const (
	lineOK lineState = iota
	lineEOF
	lineTimeout
	lineCancelled
)

// next waits for one line of the child's output.
func (c *checkChild) next(ctx context.Context, timeout time.Duration) ([]byte, lineState) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-c.lines:
		if !ok {
			return nil, lineEOF
		}
		return line, lineOK
	case <-t.C:
		return nil, lineTimeout
	case <-ctx.Done():
		return nil, lineCancelled
	}
}

// kill ends the child by its own pid (never by name), and what it may
// have started by its process group (the child leads it, and is not yet
// reaped, so no other group can have that id: kill is called once per
// child, and is what reaps it). Wait closes the pipes pipeGrace after the
// child's death even if a process out of the group holds them: the
// reader then ends too.
func (c *checkChild) kill() {
	c.in.Close()
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	c.cmd.Process.Kill() // an error means it has exited already
	c.cmd.Wait()
	for range c.lines {
	}
}

// stop ends an idle child. It holds no lock between keys and writes
// nothing, so a kill loses nothing, and does not wait for an exit that a
// race-detector build delays by a second.
func (c *checkChild) stop() { c.kill() }

// headBuffer keeps the first max bytes written to it: a Go crash report
// starts with what happened, and goes on with every goroutine's stack.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// summary is the first lines of what the child wrote on stderr.
func (h *headBuffer) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range strings.Split(h.buf.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
		if len(out) == 3 {
			break
		}
	}
	if len(out) == 0 {
		return "nothing on stderr"
	}
	return strings.Join(out, " / ")
}
