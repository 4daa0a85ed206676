package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/jsstr"
	"sessdb/store"
)

// A knob is one configuration value with its environment variable and its
// flag; the flag wins. Every knob of DESIGN.md's configuration table keeps
// the legacy variable name, so a deployment's settings mean the same thing.
type knob struct {
	env, flag, help string
	value           string // the flag's value; "" = not given
}

// bind defines the knob's flag on fs; its help names the variable.
func (k *knob) bind(fs *flag.FlagSet) *knob {
	fs.Var((*knobValue)(k), k.flag, k.help+" [$"+k.env+"]")
	return k
}

// knobValue is a knob as its flag's value: the flag sets k.value, and the
// flag set can tell a knob's flag from the others (knownEnv).
type knobValue knob

func (v *knobValue) String() string     { return v.value }
func (v *knobValue) Set(s string) error { v.value = s; return nil }

// config is the store configuration: the sessions root, and the ladder's
// bounds for the commands that judge keys (bounds is nil for the others).
type config struct {
	sessionsDir knob
	bounds      *boundKnobs
}

type boundKnobs struct {
	ttlDays, maxBytes, maxAgeDays, maxChain, maxContextPct knob
}

// configFlagNames are the flags bindRoot and bindBounds define: help
// lists them apart from a command's own.
var configFlagNames = map[string]bool{
	"sessions-dir": true, "ttl-days": true, "max-bytes": true, "max-age-days": true, "max-resume-chain": true, "max-context-pct": true,
}

// bindRoot defines --sessions-dir only: for the commands that never judge
// a key (migrate).
func bindRoot(fs *flag.FlagSet) *config {
	c := &config{sessionsDir: knob{env: "PI_SESSIONS_DIR", flag: "sessions-dir", help: "the sessions root `DIR` (a DIR argument wins over it)"}}
	c.sessionsDir.bind(fs)
	return c
}

// bindConfig defines the sessions root and every bound of the ladder.
func bindConfig(fs *flag.FlagSet) *config {
	c := bindRoot(fs)
	c.bounds = &boundKnobs{
		ttlDays:       knob{env: "PI_SESSIONS_TTL_DAYS", flag: "ttl-days", help: "the `DAYS` since its last promotion after which a key expires; 0 keeps every key (default 14)"},
		maxBytes:      knob{env: "PI_SESSION_MAX_BYTES", flag: "max-bytes", help: "the largest transcript resumed or promoted, in `BYTES`; 0 = no cap (default 8388608)"},
		maxAgeDays:    knob{env: "PI_SESSION_MAX_AGE_DAYS", flag: "max-age-days", help: "the oldest conversation resumed, in `DAYS` since its header timestamp; 0 = off (default 0)"},
		maxChain:      knob{env: "PI_SESSION_MAX_RESUME_CHAIN", flag: "max-resume-chain", help: "force a cold start after `N` consecutive deliveries; 0 = off (default 0)"},
		maxContextPct: knob{env: "PI_SESSION_MAX_CONTEXT_PCT", flag: "max-context-pct", help: "refuse to resume a context at or above `PCT` percent of its window, 1..100 (default: unset, off)"},
	}
	b := c.bounds
	for _, k := range []*knob{&b.ttlDays, &b.maxBytes, &b.maxAgeDays, &b.maxChain, &b.maxContextPct} {
		k.bind(fs)
	}
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
	d, n := c.dirSetting(getenv, arg)
	if d == "" {
		return "", errSessionsDirUnset
	}
	if err := rootPath(n, d); err != nil {
		return d, err
	}
	if err := notAFleetsDir(n, d); err != nil {
		return d, err
	}
	return d, notAKeyDir(n, d)
}

// dirSetting is the sessions root as dir takes it, unchecked, and the
// name of the setting that gave it, for a message that names it: "the
// DIR argument", or the flag or variable.
func (c *config) dirSetting(getenv func(string) string, arg string) (root, name string) {
	if arg != "" {
		return arg, "the DIR argument"
	}
	return c.sessionsDir.get(getenv)
}

// notAFleetsDir refuses a sessions root that is a fleet's transcripts dir:
// one that holds the fleet's mark (shared.MarkName), whatever is there.
// A worker whose PI_SESSIONS_DIR names the shared mount (its etcd
// endpoints dropped) resolved every fleet key absent and promoted into
// the fleet's key dirs, where no fleet worker reads; a walk took the
// fleet's files for unknown entries. A dir marked by mistake (a fleet
// once given a sessions root as its transcripts dir) is a root again once
// the mark is removed, which the error says.
func notAFleetsDir(name, p string) error {
	if _, err := os.Lstat(filepath.Join(p, shared.MarkName)); err != nil {
		return nil
	}
	return fmt.Errorf("%s: %s is a fleet's transcripts dir (it holds %s, the fleet's mark), not a sessions root: run the command on the fleet (--etcd-endpoints, PI_SESSIONS_ETCD_ENDPOINTS, with --transcripts-dir), or name a sessions root; a sessions root a fleet marked by mistake is one again once %s is removed", name, quoteName(p), shared.MarkName, shared.MarkName)
}

// notAKeyDir refuses a sessions root that is a key dir: one named as a
// key (32 lowercase hex) that holds meta.db or current.jsonl, which
// sessdb writes only inside a key dir. Set one level too deep
// (PI_SESSIONS_DIR=/var/lib/pi/sessions/<key>, a path copied from a dump
// or a log), the root exists, so resolve said nothing: every key was
// absent there, and each promotion made a key dir inside that key's dir,
// where no worker with the right root reads it, exit 0; the reap of the
// real root then refused that key for good, a directory in it that is
// not the store's. Both tests are needed: a copy of a key's meta.db or
// transcript left at the top of a real root (an operator's look at it)
// must not stop every worker, and a root's own name is no key. The name
// judged is the one given and the directory's own, links followed: a
// link of another name to a key dir (/srv/current -> sessions/<key>) is
// that key dir.
//
// A root holds neither file at its top, and that is asked first, of the
// name as given (the kernel takes its links as it goes): two lstats, where
// resolving the root's links first cost 20 to 50 µs on every command.
// Only a dir that holds one is judged by its names.
func notAKeyDir(name, p string) error {
	held := ""
	for _, f := range []string{db.FileName, store.TranscriptName} {
		if _, err := os.Lstat(fsat.JoinUncleaned(p, f)); err == nil {
			held = f
			break
		}
	}
	if held == "" {
		return nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil
	}
	// Where p leads is asked of the name as given, not of abs: Abs drops
	// "link/.." by its letters, where the kernel goes to the parent of
	// the link's target.
	real, err := fsat.ResolvedPath(p)
	if err != nil || !store.ValidKey(filepath.Base(abs)) && !store.ValidKey(filepath.Base(real)) {
		return nil
	}
	via, parent := "", filepath.Dir(abs)
	if real != abs {
		via = " (a link to " + quoteName(real) + ")"
		// The name given is itself a link (of another name, or of the
		// key's, in a dir of links): the root is where it leads. A link
		// above it leaves the path given its root's name.
		if fi, err := os.Lstat(abs); (err == nil && fi.Mode()&os.ModeSymlink != 0) || !store.ValidKey(filepath.Base(abs)) {
			parent = filepath.Dir(real)
		}
	}
	return fmt.Errorf("%s: %s%s is a key dir (it holds %s), not a sessions root: name the directory that holds the key dirs (its parent, %s?)", name, quoteName(p), via, held, quoteName(parent))
}

// rootPath refuses a sessions root that is not valid UTF-8 (utf8Path),
// and one whose name begins or ends with white space: a quoting mistake
// (PI_SESSIONS_DIR=' ', an env file's trailing blank), never a root's
// real name. Taken as given, ' ' is a directory made wherever the worker
// runs, and '/var/lib/pi/sessions ' a second root beside the real one:
// every key absent there, and promote filling it.
func rootPath(name, p string) error {
	if err := literalName(name, p, "a sessions root's name has none"); err != nil {
		return err
	}
	if err := pathLength(name, p); err != nil {
		return err
	}
	return utf8Path(name, p)
}

// unexpanded refuses p, given as name, when it holds what only a shell
// expands: a first component beginning with "~", or a substitution
// (shellSubstitution). An env file, docker's --env-file, a unit's
// Environment= or a Python env dict pass "~/sessions" and
// "$HOME/sessions" as written, and Kubernetes passes "$(NAME)" so when
// NAME is not defined before it in the pod's env list; taken as a
// relative path, that is a directory of that name wherever the worker
// runs: every key absent there, and promote making it.
func unexpanded(name, p string) error {
	if strings.HasPrefix(p, "~") {
		return fmt.Errorf("%s: %s begins with ~, which only a shell expands (an env file or a unit's Environment= does not): give the absolute path", name, quoteName(p))
	}
	return shellSubstitution(name, p, "the path itself")
}

// shellSubstitution refuses p, given as name, when it holds a command
// substitution in backticks or a variable ($NAME, ${NAME}, $(NAME)),
// which only a shell expands, or is wholly in quotes, which only a shell
// (or systemd's EnvironmentFile=) removes: docker's --env-file, Kubernetes
// and an env dict pass PI_SESSIONS_DIR="/srv/sessions" quotes and all, a
// relative name. give says what to give instead. A "$" before anything
// else is left a name's: a shell does expand $1, $$ or $?, but a name
// holding one (ops$1, a$$b) is far likelier a real directory's than a
// parameter nobody sets in an env file, so only a letter, "_", "{" or "("
// after it is refused. One backtick alone is a syntax error to a shell,
// and a quote inside a name or one not closed is no quoting of the
// whole: each can only be part of a name.
func shellSubstitution(name, p, give string) error {
	if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') && p[len(p)-1] == p[0] {
		return fmt.Errorf("%s: %s is in quotes, which only a shell removes (docker's --env-file, Kubernetes and an env dict pass them as written): give %s without them", name, quoteName(p), give)
	}
	if strings.Count(p, "`") >= 2 {
		return fmt.Errorf("%s: %s holds a command substitution (`...`), which only a shell expands (an env file or a unit's Environment= does not): give %s", name, quoteName(p), give)
	}
	for rest := p; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 || i+1 == len(rest) {
			return nil
		}
		if c := rest[i+1]; c == '{' || c == '(' || c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' {
			return fmt.Errorf("%s: %s names a variable, which only a shell expands (an env file or a unit's Environment= does not): give %s", name, quoteName(p), give)
		}
		rest = rest[i+1:]
	}
}

// literalName refuses p, given as name, when it begins or ends with white
// space (spaceAround, why saying what the name should be) or holds what
// only a shell expands (unexpanded). Every name the configuration gives
// passes it: a sessions root, a job dir, the fleet's key prefix and
// transcripts dir, and the files it names (a models file, the etcd CA,
// client certificate and key, the password file). They come from the same
// env files and units; taken as given, such a name was another root or
// namespace, every key absent there, or a file that failed to open as
// "stat ~/ca.pem: no such file or directory", the cause unsaid.
func literalName(name, p, why string) error {
	if err := spaceAround(name, p, why); err != nil {
		return err
	}
	return unexpanded(name, p)
}

// spaceAround refuses p, given as name, when it begins or ends with white
// space: a quoting mistake (PI_SESSIONS_DIR=' ', an env file's trailing
// blank), never a real root's or prefix's name. why says what the name
// should be.
func spaceAround(name, p, why string) error {
	if strings.TrimFunc(p, jsstr.IsSpace) != p {
		return fmt.Errorf("%s: %s begins or ends with white space (a quoting mistake?): %s", name, quoteName(p), why)
	}
	return nil
}

// pathLength refuses a path longer than the system opens. Opened, it
// would fail with ENAMETOOLONG, a fault whose message quotes the path
// whole: a runaway value (100 KB in a variable) would be 100 KB on
// stderr, and a worker's log line.
func pathLength(name, p string) error {
	if len(p) >= unix.PathMax {
		return fmt.Errorf("%s: %s is longer than any path this system opens (%d bytes)", name, brief(p), unix.PathMax-1)
	}
	return nil
}

// utf8Path refuses a path that is not valid UTF-8: a ticket names the
// sessions root (and a fleet's transcripts dir and prefix) as JSON text,
// which cannot carry it, so its promote would find another root.
func utf8Path(name, p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("%s: %s is not valid UTF-8 (a job's ticket names it as text)", name, quoteName(p))
	}
	return nil
}

// utf8Flags refuses the first of fs's flags named that holds a value that
// is not valid UTF-8: a job's values (its dir, venue, pi version, id) go
// into its ticket, which is JSON, and into the key's history and stamps,
// read back as text; one that is not text comes back as U+FFFD, another
// value than the job gave, so that its next job would be judged by a stamp
// no job ever matches (venue-changed forever).
func utf8Flags(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		if v := fs.Lookup(name).Value.String(); !utf8.ValidString(v) {
			return fmt.Errorf("--%s: %s is not valid UTF-8 (the job's ticket and the key's history record it as text)", name, quoteName(v))
		}
	}
	return nil
}

// valueLengths refuses the first of fs's flags named that holds a value
// longer than a job's value may be (store.MaxValueBytes, the legacy
// sidecar's limit): the store would refuse it after the config was read,
// and the flag's name says more than the field's.
func valueLengths(fs *flag.FlagSet, names ...string) error {
	for _, name := range names {
		if v := fs.Lookup(name).Value.String(); len(v) > store.MaxValueBytes {
			return fmt.Errorf("--%s: %s is longer than a job's value may be (%d bytes, the most a legacy sidecar holds)", name, brief(v), store.MaxValueBytes)
		}
	}
	return nil
}

// trimStamps trims white space (JavaScript's, the legacy reader's set)
// from around each of the job's stamps it is given (pi version, venue,
// model), in place. White space around a stamp is a quoting mistake, a
// stray newline from a variable or an env file, never part of it: the
// legacy reader trims it from every sidecar, so a stamp kept with it
// could never be written to legacy files, and every later job stamped
// without it would be a mismatch (venue-changed, pi-version-changed). A
// whole number's flag ignores it the same way.
func trimStamps(stamps ...*string) {
	for _, s := range stamps {
		*s = strings.TrimFunc(*s, jsstr.IsSpace)
	}
}

// parseBounds parses the ladder's bounds strictly: "3.5", "1e3", "08", "+3" and
// negative values are configuration errors naming the variable or flag,
// never silently clamped.
func (c *config) parseBounds(getenv func(string) string) (gates.Bounds, error) {
	var b gates.Bounds
	if c.bounds == nil {
		return b, nil
	}
	kb := c.bounds
	var err error
	days := func(k *knob, def uint64) (time.Duration, error) {
		n, err := k.uint(getenv, def, maxDays)
		return time.Duration(n) * 24 * time.Hour, err
	}
	if b.TTL, err = days(&kb.ttlDays, 14); err != nil {
		return b, err
	}
	if b.MaxAge, err = days(&kb.maxAgeDays, 0); err != nil {
		return b, err
	}
	mb, err := kb.maxBytes.uint(getenv, 8<<20, math.MaxInt64)
	if err != nil {
		return b, err
	}
	b.MaxBytes = int64(mb)
	if b.MaxResumeChain, err = kb.maxChain.uint(getenv, 0, math.MaxUint64); err != nil {
		return b, err
	}
	raw, name := kb.maxContextPct.get(getenv)
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

// parseUint accepts exactly the canonical decimal form of a whole number,
// whitespace around it ignored: the legacy parser's rule,
// String(parseInt(x)) === x.trim(), without the sign.
func parseUint(name, raw string, max uint64) (uint64, error) {
	n, err := wholeNumber(raw, max)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %w", name, brief(raw), err)
	}
	return n, nil
}

// wholeNumber is parseUint without a name to blame, for flag.Value types
// (the flag package names the flag itself). What surrounds the digits is
// trimmed as JavaScript's String.prototype.trim trims (a value written
// with a newline, " 14"), so that every value the legacy store accepted
// means the same here; within, only digits.
func wholeNumber(raw string, max uint64) (uint64, error) {
	raw = strings.TrimFunc(raw, jsstr.IsSpace)
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

// isTerminal reports whether w (or the stream a syncWriter wraps) is a
// terminal.
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*syncWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// briefFlagError bounds the value a flag error quotes (the flag package
// quotes it whole: `invalid value "<100 KB>" for flag -x: ...`), and makes
// the rest printable.
//
// The flag package names a flag with one dash ("for flag -window",
// "not defined: -bogus"); help, the usage lines and docs/cli.md spell it
// with two, as the operator typed it, so the name is given its second.
func briefFlagError(msg string) string {
	for _, prefix := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			if v, err := strconv.Unquote(q); err == nil {
				rest = rest[len(q):]
				for _, by := range []string{" for flag -", " for -"} {
					if after, ok := strings.CutPrefix(rest, by); ok {
						rest = by + "-" + after
						break
					}
				}
				return prefix + brief(v) + printable(rest)
			}
		}
	}
	for _, prefix := range []string{"flag provided but not defined: ", "flag needs an argument: "} {
		if name, ok := strings.CutPrefix(msg, prefix); ok {
			return prefix + "-" + printable(bounded(name))
		}
	}
	if name, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return "bad flag syntax: " + printable(bounded(name))
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

// quoteName quotes a name the configuration or a job gives (a path, a key
// prefix, an etcd endpoint, a user; a job's dir, venue, pi version or id)
// for a message about that name: whole, up to the longest path the system
// opens. brief's 64 bytes cut off the end of a deep path (a Kubernetes
// volume's is about 100 bytes), where its misspelt last name or an
// unexpanded $VAR mostly is, and an endpoint's port: "is it misspelt?"
// could not be answered from the message. Longer, it is a runaway value,
// and brief's.
func quoteName(p string) string {
	if len(p) < unix.PathMax {
		return strconv.Quote(p)
	}
	return brief(p)
}
