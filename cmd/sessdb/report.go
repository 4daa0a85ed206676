package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// A reporter writes everything a command says on stderr: its log events
// and its errors, in one format. With --log-format json (or auto, when
// stderr is not a terminal) every line is a JSON object, the errors that
// end a command included; with console, errors are plain lines,
// "sessdb CMD: message", and log events go through zerolog's console
// writer. Each failure is reported once, here.
type reporter struct {
	cmd    string
	stderr io.Writer
	json   bool
	log    zerolog.Logger
}

// logFlags are the logging flags every command takes.
type logFlags struct{ level, format string }

func bindLog(fs *flag.FlagSet) *logFlags {
	lf := &logFlags{}
	fs.StringVar(&lf.level, "log-level", "warn", "the least severe log event written to stderr, `LEVEL`: debug, info, warn, error (an error that ends the command is always written, and so is what a reap or check --repair that failed had removed)")
	fs.StringVar(&lf.format, "log-format", "auto", "the `FORMAT` of every line on stderr: auto (console on a terminal, else json), console, json")
	return lf
}

// logAuto resolves --log-format auto for w: console on a terminal, json
// otherwise. The tests' main makes it console, so that their assertions
// read plain error lines; the tests of the json form set the flag.
var logAuto = func(w io.Writer) string {
	if isTerminal(w) {
		return "console"
	}
	return "json"
}

// newReporter makes the reporter for the command cmd ("" for sessdb
// itself) before its flags are parsed: a flag that does not parse is
// reported in the format the command line asks for (format, from
// logFormatIn), at the default level.
func newReporter(cmd string, stderr io.Writer, format string) *reporter {
	r := &reporter{cmd: cmd, stderr: &syncWriter{w: stderr}}
	r.setFormat(format, zerolog.WarnLevel)
	return r
}

func (r *reporter) setFormat(format string, level zerolog.Level) {
	format = strings.ToLower(format) // as configure reads it
	if format != "json" && format != "console" {
		format = logAuto(r.stderr)
	}
	r.json = format == "json"
	var w io.Writer = escapingWriter{r.stderr}
	if !r.json {
		w = zerolog.ConsoleWriter{Out: r.stderr, TimeFormat: time.RFC3339, NoColor: !isTerminal(r.stderr)}
	}
	r.log = zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// logLevels are the levels --log-level takes, by name.
var logLevels = map[string]zerolog.Level{"debug": zerolog.DebugLevel, "info": zerolog.InfoLevel, "warn": zerolog.WarnLevel, "error": zerolog.ErrorLevel}

// configure applies the parsed logging flags. Both take their words in
// any case (WARN, JSON), as zerolog's ParseLevel took the level's and the
// format's were not: "--log-level WARN --log-format JSON" had its first
// half taken and its second refused. ParseLevel is not used: it takes
// numbers too ("2" for warn, "-1" for trace), a form neither help nor
// docs/cli.md gives.
func (r *reporter) configure(lf *logFlags) error {
	lvl, ok := logLevels[strings.ToLower(lf.level)]
	if !ok {
		return fmt.Errorf("--log-level: %s is not a level (debug, info, warn, error)", brief(lf.level))
	}
	switch strings.ToLower(lf.format) {
	case "auto", "console", "json":
	default:
		return fmt.Errorf("--log-format: %s is not a format (auto, console, json)", brief(lf.format))
	}
	r.setFormat(lf.format, lvl)
	return nil
}

// logFormatIn finds --log-format in args before they are parsed, so that
// an error in an earlier argument is already reported in that format.
func logFormatIn(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "log-format" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value
	}
	return ""
}

func init() {
	// Every time sessdb writes is UTC (docs/json.md), its log's too.
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
}

// line writes one stderr line: a zerolog event at level with the fields,
// in JSON; "sessdb CMD: [KEY: ]message" on the console. An error line is
// written whatever --log-level says.
func (r *reporter) line(level zerolog.Level, key string, code int, msg string) {
	r.write(level, level >= zerolog.ErrorLevel, key, code, msg)
}

// done is a warning naming what a failed command did for good (a key a
// reap removed, a check's repair): part of the failure's report, it is
// written whatever --log-level says, as the error is.
func (r *reporter) done(key, msg string) {
	r.write(zerolog.WarnLevel, true, key, -1, msg)
}

// write is line, always written when always is set.
func (r *reporter) write(level zerolog.Level, always bool, key string, code int, msg string) {
	if !r.json {
		if key != "" && !strings.Contains(msg, key) {
			// (A store error names its key already: "promote KEY: ...".)
			msg = key + ": " + msg
		}
		prefix := "sessdb"
		if r.cmd != "" {
			prefix += " " + r.cmd
		}
		fmt.Fprintf(r.stderr, "%s: %s\n", prefix, printable(msg))
		return
	}
	l := r.log
	if always {
		l = l.Level(zerolog.DebugLevel) // errors are never filtered
	}
	// Every field is always there, null when it does not apply
	// (docs/json.md, the stderr line).
	e := l.WithLevel(level).Interface("cmd", orNull(r.cmd)).Interface("key", orNull(key))
	if code >= 0 {
		e = e.Int("exit", code)
	} else {
		e = e.Interface("exit", nil)
	}
	e.Msg(msg)
}

// syncWriter serialises the writes to stderr: the store's workers log
// while the command reports, and each line must stay whole.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// orNull is s, or nil (JSON null) for "".
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// usage reports an error in the command line (a flag, an argument) with
// the hint that leads to the command's help, and returns exit status 2.
func (r *reporter) usage(err error) int {
	hint := "(run 'sessdb help')"
	if r.cmd != "" && r.cmd != "help" {
		cmd, _, _ := strings.Cut(r.cmd, " ")
		hint = "(run 'sessdb help " + cmd + "')"
	}
	r.line(zerolog.ErrorLevel, "", exitUsage, fmt.Sprintf("%v %s", err, hint))
	return exitUsage
}

// config reports a configuration error (a variable, a sessions root a walk
// refuses) and returns exit status 2.
func (r *reporter) config(err error) int {
	r.line(zerolog.ErrorLevel, "", exitUsage, err.Error())
	return exitUsage
}

// configOn is config for a configuration error about one key (a ticket
// from another store), which its line names.
func (r *reporter) configOn(key string, err error) int {
	r.line(zerolog.ErrorLevel, key, exitUsage, err.Error())
	return exitUsage
}

// fault reports the error that ends the command and returns exit status 1.
func (r *reporter) fault(err error) int {
	r.line(zerolog.ErrorLevel, "", exitFault, err.Error())
	return exitFault
}

// keyFault reports one entry the command could not do; the command goes
// on with the others and exits 1 at the end.
func (r *reporter) keyFault(key, msg string) {
	r.line(zerolog.ErrorLevel, key, -1, msg)
}

// faultOn is fault for the error that ends a command about one key
// (resolve's), which its line names.
func (r *reporter) faultOn(key string, err error) int {
	r.line(zerolog.ErrorLevel, key, exitFault, err.Error())
	return exitFault
}

// interrupted reports a walk stopped by Ctrl-C, SIGTERM or SIGHUP and returns
// exit status 130.
func (r *reporter) interrupted(done int) int {
	r.line(zerolog.WarnLevel, "", exitInterrupted, fmt.Sprintf("interrupted after %s; the output covers those", plural(done, "entry")))
	return exitInterrupted
}

// endWalk ends a walk's command once its output is written (err is the
// writing's error): it flushes w; a write that failed is a fault, and a
// walk cut short (Ctrl-C) exits as interrupted, whatever else it found;
// otherwise the command's own status stands.
func (inv *invocation) endWalk(w *bufio.Writer, err error, interrupted bool, entries, status int) int {
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	switch {
	case err != nil:
		return inv.rep.fault(fmt.Errorf("write: %w", err))
	case interrupted:
		return inv.rep.interrupted(entries)
	}
	return status
}

// surviveBrokenPipes is for the commands that write the store (resolve,
// promote, check, reap, migrate). Killed by SIGPIPE, one whose stderr's
// reader is gone (a log shipper that died) would die at the first line it
// writes, every run: a warning before it starts, a key it could not do
// before the keys after it, promote's log event after the promotion and
// before its answer, so that no retry could ever read that answer; and
// migrate, which prints as it goes, would die mid-key. With the signal
// ignored, a write to such a pipe fails with EPIPE: a stderr line is
// lost, and a stdout write is a fault like a full disk (exit 1, once the
// keys under way are done). The read-only commands, and every help text,
// keep the default (a shell's 141). It is for the rest of the process:
// signal.Reset does not undo signal.Ignore (Go's runtime keeps the signal
// ignored), and a process runs one command.
func surviveBrokenPipes() {
	signal.Ignore(syscall.SIGPIPE)
}

// writeHelp writes a help text on stdout: exit 0, or, when it cannot be
// written (a full disk, a closed pipe), a fault like any other command's
// output that cannot be written.
func (r *reporter) writeHelp(stdout io.Writer, text string) int {
	if _, err := io.WriteString(stdout, text); err != nil {
		return r.fault(fmt.Errorf("write: %w", err))
	}
	return exitOK
}

// warn writes a warning line (a setting that does nothing, say).
func (r *reporter) warn(msg string) { r.warnOn("", msg) }

// warnOn is warn about one key, named in the line ("" for none).
func (r *reporter) warnOn(key, msg string) {
	if r.log.GetLevel() > zerolog.WarnLevel {
		return
	}
	r.line(zerolog.WarnLevel, key, -1, msg)
}

// storeLog is the logger the store and migrate write their events to. The
// events that report an error the command reports itself are dropped, so
// that each failure is reported once.
func (r *reporter) storeLog() zerolog.Logger {
	return r.log.Hook(zerolog.HookFunc(func(e *zerolog.Event, _ zerolog.Level, msg string) {
		switch msg {
		case "session_store_failed", // the error Resolve and Promote return
			"session_reaper_skipped": // a key reap could not do: keyFault
			e.Discard()
		}
	}))
}
