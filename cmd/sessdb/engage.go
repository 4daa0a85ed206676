package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"

	"sessdb/engage"
)

// The usage strings are constants because runEngage cannot refer to
// cmdEngage: that would be an initialization cycle.
const (
	engageUsageLine = "engage replay [--window N] [--reserve N] [--pruned-ratio R] [--cache-read-price P --cache-write-price Q] [--json] FILE"
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
	case read.set:
		prices = &engage.Prices{CacheRead: read.v, CacheWrite: write.v}
	}
	t, err := engage.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "sessdb %s: %v\n", name, err)
		return exitFault
	}
	rp, err := t.Replay(opt)
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
