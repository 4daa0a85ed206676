package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"sessdb/engage"
	"sessdb/internal/fsat"
)

var cmdEngageReplay = &command{
	name:  "engage replay",
	usage: "engage replay [--window N] [--reserve N] [--pruned-ratio R] [--cache-read-price P --cache-write-price Q] [--json] [--svg CHART] FILE",
	short: "replay a pi transcript: what each pruning policy sends pruned, and the cache misses it pays",
	long: `
Reads FILE, a pi session transcript (a regular file: a FIFO, a device or a
directory is refused, exit 1, without being read), and runs each request (each
assistant message on the branch) through both pruning policies: the stateless
check, which prunes a request whose estimate is over pi's compaction threshold
(window - reserve), and the sticky rule, which keeps pruning once engaged until
a compaction or a new session. One line per request and a summary of the pruned
requests, prefix switches (the prompt-cache misses the policy causes; not those
a transcript does not record, as a resume's pi --thinking) and re-billed tokens
of each; with the cache prices, their extra cost in USD. --json prints one
object per request and a summary (docs/json.md); --svg also writes the replay
as a chart. --pruned-ratio models a transcript recorded without pruning; every
figure it changes is marked modelled. See docs/engage.md.`,
	example: `  sessdb engage replay --cache-read-price 0.30 --cache-write-price 3.75 ~/.pi/agent/sessions/--work--/2026-11-29T09-00-00.jsonl`,
	exits:   []int{exitOK, exitFault, exitUsage},
	minArgs: 1,
	maxArgs: 1,
	argName: "FILE",
	bind:    bindEngageReplay,
}

func bindEngageReplay(fs *flag.FlagSet) func(*invocation) int {
	opt := engage.DefaultOptions()
	read, write := &decimalFlag{}, &decimalFlag{}
	fs.Var(wholeFlag{&opt.Window, engage.MaxWindow}, "window", "the model's context window in tokens, `N`")
	fs.Var(wholeFlag{&opt.Reserve, engage.MaxWindow}, "reserve", "pi's compaction.reserveTokens, `N`; the threshold is window-reserve")
	fs.Var(ratioFlag{&opt.PrunedRatio}, "pruned-ratio", "model a transcript recorded raw: a pruned request's usage is `R` times the recorded one, 0<R<=1; 1 models nothing")
	fs.Var(read, "cache-read-price", "the cache-read price `P` in USD per million tokens (with --cache-write-price)")
	fs.Var(write, "cache-write-price", "the cache-write price `Q` in USD per million tokens (with --cache-read-price)")
	asJSON := fs.Bool("json", false, "print one JSON object per request, then a summary object (docs/json.md)")
	chartPath := fs.String("svg", "", "also write the replay as an SVG chart to `CHART` (replaced atomically; a symbolic link there is refused)")
	return func(inv *invocation) int {
		var prices *engage.Prices
		switch {
		case read.set != write.set:
			return inv.rep.usage(errors.New("--cache-read-price and --cache-write-price go together"))
		case write.v < read.v:
			// The extra cost is the re-billed tokens at the write price
			// less the read price they would have cost: never negative.
			return inv.rep.usage(fmt.Errorf("--cache-write-price %s is below --cache-read-price %s: a cache write costs at least a read (swapped?)", write, read))
		case opt.Window == 0:
			return inv.rep.usage(errors.New("--window: must be at least 1"))
		case opt.Reserve >= opt.Window:
			return inv.rep.usage(fmt.Errorf("--reserve %d: must be below --window %d", opt.Reserve, opt.Window))
		case inv.given("svg") && *chartPath == "":
			return inv.rep.usage(errors.New("--svg: want a file name"))
		case *chartPath == "-":
			// "-" is stdout to most tools; here it would be a file of
			// that name, and the pipe would get the table.
			return inv.rep.usage(errors.New(`--svg -: the chart goes to a file, not stdout: name one ("./-" for a file named -)`))
		case read.set:
			prices = &engage.Prices{CacheRead: read.v, CacheWrite: write.v}
		}
		file := inv.arg(0)
		if err := pathLength("FILE", file); err != nil {
			return inv.rep.usage(err)
		}
		if err := pathLength("--svg", *chartPath); err != nil {
			return inv.rep.usage(err)
		}
		t, err := engage.ReadFile(file)
		if err != nil {
			return inv.rep.fault(err)
		}
		rp, err := t.Replay(opt)
		if err == nil && *chartPath != "" {
			// The chart goes first: if it cannot be written, the run fails
			// before anything is printed, as every other fault does. It is
			// drawn straight into its temp file: with long ids a chart is
			// several times its transcript, too much to hold.
			err = writeChart(*chartPath, func(w io.Writer) error { return rp.WriteSVG(w, file, prices) }, file)
		}
		if err == nil {
			if *asJSON {
				err = rp.WriteJSON(inv.stdout, prices)
			} else {
				err = rp.WriteTable(inv.stdout, prices)
			}
		}
		if err != nil {
			return inv.rep.fault(err)
		}
		return exitOK
	}
}

// writeChart replaces path with what write writes, atomically: a temp file
// in path's directory, written and flushed, then renamed over path, so a
// reader of path sees the old chart or the new one, never a part. Something at path
// that is not a regular file is refused, a symbolic link above all: the
// chart would replace the link, and the user who named path meant the file
// it points to or did not know it was one. (The rename replaces whatever is
// at path without following it, so a link that appears after the check is
// replaced, never written through.) The transcript the chart was drawn
// from is refused too: the rename would replace the session with its
// chart. On error the temp file is removed and path is as it was.
func writeChart(path string, write func(io.Writer) error, transcript string) error {
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return &os.PathError{Op: "write chart", Path: path, Err: errors.New("is a symbolic link; not writing through it")}
	case err == nil && !st.Mode().IsRegular():
		return &os.PathError{Op: "write chart", Path: path, Err: errors.New("is not a regular file")}
	case err == nil && sameFile(st, transcript):
		return &os.PathError{Op: "write chart", Path: path, Err: errors.New("is the transcript being replayed; not replacing it")}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	// The directory the system takes path's parent for: cleaned, a ".."
	// after a link names another, and the temp is renamed across (EXDEV
	// where that one is on another file system).
	dir, _ := fsat.SplitLast(path)
	// The temp name does not repeat base: a name as long as the system
	// allows would leave no room for the suffix.
	tmp, err := createChartTemp(dir, ".sessdb-chart.tmp-")
	if err != nil {
		return &os.PathError{Op: "write chart", Path: path, Err: err}
	}
	defer removeOnSignal(tmp.Name())()
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if chartTempHook != nil {
		chartTempHook()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return &os.PathError{Op: "write chart", Path: path, Err: err}
	}
	return nil
}

// removeOnSignal removes name when a signal that would kill the process
// (Ctrl-C, SIGTERM, a closed terminal) arrives before the returned stop is
// called, then raises the signal again with its default action: engage
// replay still dies of it at once, as docs/cli.md says, but leaves no temp
// file beside the chart (no sweep would ever remove one). A signal the
// process was started ignoring is left ignored. A signal caught just as
// stop runs is raised again all the same, after the rename: removing name
// is then a no-op.
func removeOnSignal(name string) (stop func()) {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	die := func(s os.Signal) {
		os.Remove(name)
		signal.Reset(s)
		syscall.Kill(os.Getpid(), s.(syscall.Signal))
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case s := <-c:
			die(s)
			select {} // the signal ends the process
		case <-done:
			signal.Stop(c)
			select {
			case s := <-c:
				die(s)
				select {}
			default:
			}
		}
	}()
	return func() { close(done); <-exited }
}

// chartTempHook, when set (by tests), runs once the chart's temp file is
// written, before the rename.
var chartTempHook func()

// createChartTemp creates a new file in dir named prefix and a random
// suffix, as os.CreateTemp does, but with mode 0666 less the umask, as any
// file the user asks for: os.CreateTemp's 0600 chmodded to a fixed 0644
// made the chart readable by everyone under a private umask.
func createChartTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := fsat.JoinUncleaned(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return f, err
		}
	}
}

// sameFile reports whether st is the file at path, a link followed as the
// replay's read follows it.
func sameFile(st fs.FileInfo, path string) bool {
	o, err := os.Stat(path)
	return err == nil && os.SameFile(st, o)
}

// wholeFlag is a token count: the canonical decimal form of a whole number
// up to max, so "3.5", "1e3", "08", "+3" and negatives are refused, never
// rounded.
type wholeFlag struct {
	p   *int64
	max int64
}

func (f wholeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatInt(*f.p, 10)
}

func (f wholeFlag) Set(s string) error {
	n, err := wholeNumber(s, uint64(f.max))
	if err != nil {
		return err
	}
	*f.p = int64(n)
	return nil
}

// decimalFlag is a non-negative decimal written as digits with at most one
// point ("3", "0.30", "3.75"); set records that it was given.
type decimalFlag struct {
	v   float64
	set bool
}

func (f *decimalFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatFloat(f.v, 'f', -1, 64)
}

func (f *decimalFlag) Set(s string) error {
	v, err := parseDecimal(s)
	if err != nil {
		return err
	}
	f.v, f.set = v, true
	return nil
}

type ratioFlag struct{ p *float64 }

func (f ratioFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

func (f ratioFlag) Set(s string) error {
	v, err := parseDecimal(s)
	if err == nil && (v <= 0 || v > 1) {
		err = errors.New("want a ratio above 0 and at most 1")
	}
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

func parseDecimal(s string) (float64, error) {
	ok, point := s != "", false
	for i := 0; i < len(s) && ok; i++ {
		switch {
		case s[i] >= '0' && s[i] <= '9':
		case s[i] == '.' && !point && i > 0 && i < len(s)-1:
			point = true
		default:
			ok = false
		}
	}
	if !ok {
		return 0, errors.New("want a decimal number: digits with at most one point, no sign or exponent")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v > maxPrice {
		// strconv's error would quote the whole value again.
		return 0, fmt.Errorf("want at most %d", maxPrice)
	}
	return v, nil
}

// maxPrice bounds a price, in USD per million tokens: no model costs near
// it, and a price far beyond it makes the extra cost overflow to +Inf,
// which neither the table nor JSON can say.
const maxPrice = 1_000_000
