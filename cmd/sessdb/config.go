package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// A knob is one configuration value with its environment variable and its
// flag; the flag wins. Every knob of DESIGN.md's configuration table keeps
// the legacy variable name, so a deployment's settings mean the same thing.
type knob struct {
	env, flag, help string
	value           string // the flag's value; "" = not given
}

// config is the store configuration shared by every command that opens a
// sessions root.
type config struct {
	sessionsDir, ttlDays, maxBytes, maxAgeDays, maxChain, maxContextPct knob
	logLevel, logFormat                                                 string
}

func bindConfig(fs *flag.FlagSet) *config {
	c := &config{
		sessionsDir:   knob{env: "PI_SESSIONS_DIR", flag: "sessions-dir", help: "the sessions root"},
		ttlDays:       knob{env: "PI_SESSIONS_TTL_DAYS", flag: "ttl-days", help: "days since the last promotion before a key expires; 0 keeps forever (default 14)"},
		maxBytes:      knob{env: "PI_SESSION_MAX_BYTES", flag: "max-bytes", help: "largest transcript resumed or promoted; 0 = no cap (default 8388608)"},
		maxAgeDays:    knob{env: "PI_SESSION_MAX_AGE_DAYS", flag: "max-age-days", help: "oldest conversation (header timestamp) resumed, in days; 0 = off"},
		maxChain:      knob{env: "PI_SESSION_MAX_RESUME_CHAIN", flag: "max-resume-chain", help: "consecutive deliveries before a forced cold start; 0 = off"},
		maxContextPct: knob{env: "PI_SESSION_MAX_CONTEXT_PCT", flag: "max-context-pct", help: "refuse to resume a context at or above this percent of its window, 1..100; unset = off"},
	}
	for _, k := range []*knob{&c.sessionsDir, &c.ttlDays, &c.maxBytes, &c.maxAgeDays, &c.maxChain, &c.maxContextPct} {
		fs.StringVar(&k.value, k.flag, "", k.help+" [$"+k.env+"]")
	}
	fs.StringVar(&c.logLevel, "log-level", "warn", "least severe log event written to stderr: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "auto", "stderr log format: auto (console on a terminal, else JSON lines), console, json")
	return c
}

// get returns the knob's raw text and the name to blame for it.
func (k *knob) get(getenv func(string) string) (raw, name string) {
	if k.value != "" {
		return k.value, "--" + k.flag
	}
	return getenv(k.env), k.env
}

// errSessionsDirUnset is the feature's one fail-closed configuration.
var errSessionsDirUnset = errors.New("sessions-dir-unset: set PI_SESSIONS_DIR or --sessions-dir")

// dir returns the sessions root, from the flag, the environment, or arg
// (a positional DIR), in that order of precedence: arg first.
func (c *config) dir(getenv func(string) string, arg string) (string, error) {
	if arg != "" {
		return arg, nil
	}
	if d, _ := c.sessionsDir.get(getenv); d != "" {
		return d, nil
	}
	return "", errSessionsDirUnset
}

// bounds parses the ladder's bounds strictly: "3.5", "1e3", "08", "+3" and
// negative values are configuration errors naming the variable or flag,
// never silently clamped.
func (c *config) bounds(getenv func(string) string) (gates.Bounds, error) {
	var b gates.Bounds
	var err error
	days := func(k *knob, def uint64) (time.Duration, error) {
		n, err := k.uint(getenv, def, maxDays)
		return time.Duration(n) * 24 * time.Hour, err
	}
	if b.TTL, err = days(&c.ttlDays, 14); err != nil {
		return b, err
	}
	if b.MaxAge, err = days(&c.maxAgeDays, 0); err != nil {
		return b, err
	}
	mb, err := c.maxBytes.uint(getenv, 8<<20, math.MaxInt64)
	if err != nil {
		return b, err
	}
	b.MaxBytes = int64(mb)
	if b.MaxResumeChain, err = c.maxChain.uint(getenv, 0, math.MaxUint64); err != nil {
		return b, err
	}
	raw, name := c.maxContextPct.get(getenv)
	if raw != "" {
		pct, err := parseUint(name, raw, 100)
		if err == nil && pct == 0 {
			err = fmt.Errorf("%s: %s is out of range (want 1..100, or unset for off)", name, brief(raw))
		}
		if err != nil {
			return b, err
		}
		b.MaxContextPct = int(pct)
	}
	return b, nil
}

// maxDays keeps days*24h inside a time.Duration (about 292 years).
const maxDays = math.MaxInt64 / uint64(24*time.Hour)

func (k *knob) uint(getenv func(string) string, def, max uint64) (uint64, error) {
	raw, name := k.get(getenv)
	if raw == "" {
		return def, nil
	}
	return parseUint(name, raw, max)
}

// parseUint accepts exactly the canonical decimal form of a whole number
// (the legacy parser's String(parseInt(x)) === x rule, without the sign).
func parseUint(name, raw string, max uint64) (uint64, error) {
	n, err := wholeNumber(raw, max)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %w", name, brief(raw), err)
	}
	return n, nil
}

// wholeNumber is parseUint without a name to blame, for flag.Value types
// (the flag package names the flag itself).
func wholeNumber(raw string, max uint64) (uint64, error) {
	valid := len(raw) > 0 && (raw == "0" || raw[0] != '0')
	for i := 0; i < len(raw) && valid; i++ {
		valid = raw[i] >= '0' && raw[i] <= '9'
	}
	if !valid {
		return 0, errors.New("is not a whole number (want digits only, no sign, no leading zero)")
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("is out of range (at most %d)", max)
	}
	return n, nil
}

// logger builds the stderr logger: a console writer when stderr is a
// terminal, JSON lines otherwise, unless --log-format says which.
func (c *config) logger(stderr io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(c.logLevel)
	if err != nil || c.logLevel == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level: %s is not a level (debug, info, warn, error)", brief(c.logLevel))
	}
	w := stderr
	switch c.logFormat {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339}
	case "auto":
		if isTerminal(stderr) {
			w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339}
		}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format: %s is not a format (auto, console, json)", brief(c.logFormat))
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// newFlagSet returns a flag set that reports to stderr and never exits. A
// parse error is one line on stderr naming the flag, with a hint, instead
// of the whole usage (see flagOutput); -h still prints the usage. The
// command is looked up by name when usage is printed, because a command's
// run function referring to its own table entry would be an
// initialization cycle.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{cmd: name, w: stderr})
	fs.Usage = func() {
		w := fs.Output()
		if c := lookup(name); c != nil {
			fmt.Fprintf(w, "usage: sessdb %s\n\n%s\n\nflags:\n", c.usage, c.short)
		}
		fs.PrintDefaults()
	}
	return fs
}

// flagOutput is a flag set's output. The flag package reports a parse
// error by writing its message and then calling Usage, which would print
// every flag under it; a script's log then holds forty lines for one typo.
// flagOutput turns the message into one line, "sessdb CMD: MESSAGE (run
// 'sessdb help CMD')", and drops the usage that follows it. Anything else
// (the usage that -h asks for) passes through.
type flagOutput struct {
	cmd    string
	w      io.Writer
	failed bool // a parse error was reported: what follows is its usage
}

// flagErrors are how the flag package's parse errors begin.
var flagErrors = []string{"flag provided but not defined:", "bad flag syntax:", "flag needs an argument:", "invalid value ", "invalid boolean value ", "invalid boolean flag "}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.failed {
		return len(p), nil
	}
	msg := strings.TrimSuffix(string(p), "\n")
	for _, prefix := range flagErrors {
		if strings.HasPrefix(msg, prefix) {
			o.failed = true
			cmd, _, _ := strings.Cut(o.cmd, " ")
			fmt.Fprintf(o.w, "sessdb %s: %s (run 'sessdb help %s')\n", o.cmd, briefFlagError(msg), cmd)
			return len(p), nil
		}
	}
	return o.w.Write(p)
}

// briefFlagError bounds the value a flag error quotes (the flag package
// quotes it whole: `invalid value "<100 KB>" for flag -x: ...`), and makes
// the rest printable.
func briefFlagError(msg string) string {
	for _, prefix := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			if v, err := strconv.Unquote(q); err == nil {
				return prefix + brief(v) + printable(rest[len(q):])
			}
		}
	}
	for _, prefix := range []string{"flag provided but not defined: ", "bad flag syntax: ", "flag needs an argument: "} {
		if name, ok := strings.CutPrefix(msg, prefix); ok {
			return prefix + printable(bounded(name))
		}
	}
	return printable(bounded(msg))
}

// bounded is brief without the quotes, for a flag's name as the flag
// package writes it.
func bounded(v string) string {
	if len(v) <= briefMax {
		return v
	}
	cut := briefMax
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", v[:cut], len(v))
}

// usageError prints a one-line usage or configuration error and returns
// the usage exit status.
func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sessdb %s: %v\n", cmd, err)
	return exitUsage
}

// flagGiven reports whether a flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// briefMax is how much of a bad value an error message quotes: enough to
// recognise it, and a 100 KB environment value still makes one short line.
const briefMax = 64

// brief quotes a value for an error message: whole when short, else its
// first briefMax bytes (cut at a rune boundary) and how long it was.
func brief(v string) string {
	b := bounded(v)
	if len(b) == len(v) {
		return strconv.Quote(v)
	}
	head, tail, _ := strings.Cut(b, "…")
	return strconv.Quote(head) + "…" + tail
}
