package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"sessdb/engage"
)

// The usage strings are constants because runEngage cannot refer to
// cmdEngage: that would be an initialization cycle.
const (
	engageUsageLine = "engage replay [--window N] [--reserve N] [--pruned-ratio R] [--cache-read-price P --cache-write-price Q] [--json] [--svg CHART] FILE"
	engageShort     = "replay a pi transcript request by request: which requests the stateless check and the sticky rule send pruned, and the prompt-cache misses each pays"
)

var cmdEngage = &command{name: "engage", usage: engageUsageLine, short: engageShort, run: runEngage}

func runEngage(args []string, stdout, stderr io.Writer) int {
	const name = "engage replay"
	if len(args) == 0 || args[0] != "replay" {
		fmt.Fprintf(stderr, "sessdb engage: want the subcommand replay\nusage: sessdb %s\n", engageUsageLine)
		return exitUsage
	}
	fs := newFlagSet(name, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sessdb %s\n\n%s\n\nflags:\n", engageUsageLine, engageShort)
		fs.PrintDefaults()
	}
	opt := engage.DefaultOptions()
	var read, write decimalFlag
	fs.Var(wholeFlag{&opt.Window}, "window", "the model's context window in tokens (pi's default 200000)")
	fs.Var(wholeFlag{&opt.Reserve}, "reserve", "pi's compaction.reserveTokens (default 16384); the threshold is window-reserve")
	fs.Var(ratioFlag{&opt.PrunedRatio}, "pruned-ratio", "model a transcript recorded raw: a pruned request's usage is `R` times the recorded one, 0<R<=1 (default 1: no model)")
	fs.Var(&read, "cache-read-price", "cache-read price in USD per million tokens (with --cache-write-price)")
	fs.Var(&write, "cache-write-price", "cache-write price in USD per million tokens (with --cache-read-price)")
	asJSON := fs.Bool("json", false, "print one JSON object per request, then a summary object")
	chartPath := fs.String("svg", "", "also write the replay as an SVG chart to `CHART` (replaced atomically; a symbolic link there is refused)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // the flag package has printed the error, naming the flag
	}
	var prices *engage.Prices
	switch {
	case fs.NArg() != 1:
		return engageUsage(stderr, "want exactly one FILE after the flags, got %d arguments", fs.NArg())
	case read.set != write.set:
		return engageUsage(stderr, "--cache-read-price and --cache-write-price go together")
	case opt.Window == 0:
		return engageUsage(stderr, "--window: must be at least 1")
	case opt.Reserve >= opt.Window:
		return engageUsage(stderr, "--reserve %d: must be below --window %d", opt.Reserve, opt.Window)
	case isSet(fs, "svg") && *chartPath == "":
		return engageUsage(stderr, "--svg: want a file name")
	case read.set:
		prices = &engage.Prices{CacheRead: read.v, CacheWrite: write.v}
	}
	t, err := engage.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "sessdb %s: %v\n", name, err)
		return exitFault
	}
	rp, err := t.Replay(opt)
	if err == nil && *chartPath != "" {
		// The chart goes first: if it cannot be written, the run fails
		// before anything is printed, as every other fault does.
		var chart bytes.Buffer
		if err = rp.WriteSVG(&chart, fs.Arg(0), prices); err == nil {
			err = writeChart(*chartPath, chart.Bytes())
		}
	}
	if err == nil {
		if *asJSON {
			err = rp.WriteJSON(stdout, prices)
		} else {
			err = rp.WriteTable(stdout, prices)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sessdb %s: %v\n", name, err)
		return exitFault
	}
	return exitOK
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// writeChart replaces path with data atomically: a temp file in path's
// directory, written and flushed, then renamed over path, so a reader of
// path sees the old chart or the new one, never a part. Something at path
// that is not a regular file is refused, a symbolic link above all: the
// chart would replace the link, and the user who named path meant the file
// it points to or did not know it was one. (The rename replaces whatever is
// at path without following it, so a link that appears after the check is
// replaced, never written through.) On error the temp file is removed and
// path is as it was.
func writeChart(path string, data []byte) error {
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return &os.PathError{Op: "write chart", Path: path, Err: errors.New("is a symbolic link; not writing through it")}
	case err == nil && !st.Mode().IsRegular():
		return &os.PathError{Op: "write chart", Path: path, Err: errors.New("is not a regular file")}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return &os.PathError{Op: "write chart", Path: path, Err: err}
	}
	// CreateTemp makes the file 0600; a chart is for reading, like any
	// file the user asks for (the umask is not applied).
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
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

func engageUsage(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "sessdb engage replay: "+format+"\n", args...)
	return exitUsage
}

// wholeFlag is a token count: the canonical decimal form of a whole number,
// so "3.5", "1e3", "08", "+3" and negatives are refused, never rounded.
type wholeFlag struct{ p *int64 }

func (f wholeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatInt(*f.p, 10)
}

func (f wholeFlag) Set(s string) error {
	n, err := wholeNumber(s, math.MaxInt64)
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
	return strconv.FormatFloat(f.v, 'g', -1, 64)
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
	return strconv.ParseFloat(s, 64)
}
