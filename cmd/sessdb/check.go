package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"sessdb/store"
)

var cmdCheck = &command{
	name:  "check",
	usage: "check [--repair] [--json] [--deep-check-timeout D] [DIR]",
	short: "find damage under a sessions root (damaged meta.db, undecodable records, transcripts that do not match, pending promotions, stray temps, links); --repair fixes what it safely can",
	run:   runCheck,
}

const checkExample = `  sessdb check /var/lib/pi/sessions; echo "exit $?"
  sessdb check --repair /var/lib/pi/sessions
  sessdb check --json /var/lib/pi/sessions | jq -c 'select(.severity == "problem")'`

// checkSummary is the last JSON line of check --json.
type checkSummary struct {
	Summary     store.CheckSummary `json:"summary"`
	Repair      bool               `json:"repair"`
	Interrupted bool               `json:"interrupted"`
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == childArg && os.Getenv(childEnv) == "1" {
		return runCheckChild(args[1:], os.Stdin, stdout)
	}
	fs := newFlagSet("check", stderr)
	setUsage(fs, "check", checkExample)
	cfg := bindConfig(fs)
	repair := fs.Bool("repair", false, "roll pending promotions forward, remove stray temp files older than an hour, move a damaged meta.db aside (never deleted); every action is printed")
	asJSON := fs.Bool("json", false, "one JSON object per finding, then a summary object (fields: docs/OPERATIONS.md)")
	timeout := fs.Duration("deep-check-timeout", 30*time.Second, "how long bbolt's consistency check of one meta.db may take before its process is killed")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case fs.NArg() > 1:
		return usageError(stderr, "check", fmt.Errorf("unexpected argument %s", brief(fs.Arg(1))))
	case *timeout <= 0:
		return usageError(stderr, "check", errors.New("--deep-check-timeout: must be positive"))
	}
	st, log, code := openStore(cfg, "check", fs.Arg(0), stderr)
	if st == nil {
		return code
	}
	if err := checkWalkRoot(st.Root()); err != nil {
		return usageError(stderr, "check", err)
	}
	deep := &deepChecker{root: st.Root(), timeout: *timeout}
	defer deep.close()

	ctx, stop := interruptContext()
	defer stop()
	prog := progressTo(stderr, "check")
	w := bufio.NewWriter(clearing(stdout, prog))
	enc := json.NewEncoder(w)
	visit := func(f store.Finding) error {
		if f.Repaired {
			log.Info().Str("path", f.Path).Str("kind", string(f.Kind)).Str("repair", f.Repair).Msg("check_repaired")
		}
		if *asJSON {
			return enc.Encode(f)
		}
		return writeFinding(w, f)
	}
	opts := store.CheckOptions{Repair: *repair, DeepCheck: deep.check, Progress: prog.report()}
	sum, err := st.Check(ctx, opts, visit)
	prog.clear()
	interrupted := err != nil && ctx.Err() != nil
	if err == nil || interrupted {
		if *asJSON {
			err2 := enc.Encode(checkSummary{Summary: sum, Repair: *repair, Interrupted: interrupted})
			if err == nil {
				err = err2
			}
		} else {
			writeCheckSummary(w, sum, *repair, interrupted)
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if code := walkEnd(stderr, "check", err, sum.Entries); code != exitOK {
		return code
	}
	if sum.Remaining > 0 {
		return exitIssues
	}
	return exitOK
}

// writeFinding writes one finding as a line an operator can grep, and the
// repair's outcome under it, with what came from the disk made printable.
func writeFinding(w io.Writer, f store.Finding) error {
	if _, err := fmt.Fprintf(w, "%-7s  %s: %s: %s\n", f.Severity, printable(f.Path), f.Kind, printable(f.Detail)); err != nil {
		return err
	}
	if f.Repair != "" {
		if _, err := fmt.Fprintf(w, "         repair: %s\n", printable(f.Repair)); err != nil {
			return err
		}
	}
	return nil
}

func writeCheckSummary(w io.Writer, s store.CheckSummary, repair, interrupted bool) {
	fmt.Fprintf(w, "checked %d entries (%d keys): %s, %s", s.Entries, s.Keys, plural(s.Problems, "problem"), plural(s.Notices, "notice"))
	if repair {
		fmt.Fprintf(w, "; repaired %d, %s remaining", s.Repaired, plural(s.Remaining, "problem"))
	}
	if interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintln(w)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clearing returns stdout as is, or, when stdout and the progress line share
// a terminal, a writer that erases the progress line before each write.
func clearing(stdout io.Writer, p *progress) io.Writer {
	if p == nil || !isTerminal(stdout) {
		return stdout
	}
	return clearingWriter{stdout, p}
}

type clearingWriter struct {
	w io.Writer
	p *progress
}

func (c clearingWriter) Write(b []byte) (int, error) {
	c.p.clear()
	return c.w.Write(b)
}
