package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// A command is one row of sessdb's command table: everything that
// 'sessdb help CMD', 'sessdb CMD -h' and docs/cli.md print about it, and
// the function that runs it. The three print the same text (helpText), and
// TestCLIReference fails when docs/cli.md drifts from the table.
type command struct {
	name    string // "dump"; "engage replay" for a subcommand
	usage   string // the usage line, after "sessdb "
	short   string // one line, for the command list
	long    string // what it does and promises, in a few short paragraphs
	example string // shell lines, each one that runs as shown
	exits   []int  // the statuses it can return (their meaning: exitMeaning)
	// minArgs and maxArgs bound the positional arguments (DIR, FILE),
	// which may stand anywhere among the flags.
	minArgs, maxArgs int
	argName          string // what a positional argument is: "DIR" when empty
	// changes is true for the commands that write the store (resolve,
	// promote, check, reap, migrate): a broken pipe on stdout or stderr
	// never kills one (surviveBrokenPipes).
	changes bool
	// bind defines the command's flags on fs and returns its body, which
	// runs once the arguments have parsed. A fresh flag set is bound for
	// every run and for every help text, so no value outlives one run.
	bind func(fs *flag.FlagSet) func(inv *invocation) int
}

// An invocation is one run of a command: its positional arguments, its
// output streams, and the reporter that writes its errors and its log.
type invocation struct {
	cmd            *command
	fs             *flag.FlagSet
	args           []string
	stdout, stderr io.Writer
	rep            *reporter
}

// arg returns the i-th positional argument, or "".
func (inv *invocation) arg(i int) string {
	if i < len(inv.args) {
		return inv.args[i]
	}
	return ""
}

// given reports whether a flag was set on the command line.
func (inv *invocation) given(name string) bool { return flagGiven(inv.fs, name) }

// newFlags returns an empty flag set for c that never prints and never
// exits: parse errors come back as errors, and -h as flag.ErrHelp.
func (c *command) newFlags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// execute parses args and runs c. Flags and positional arguments may come
// in any order ("dump DIR --json"); "--" ends the flags. -h prints the
// help on stdout and exits 0; an error in the arguments is one line on
// stderr, naming the flag or argument, with a hint, and exits 2.
func (c *command) execute(args []string, stdout, stderr io.Writer) int {
	rep := newReporter(c.name, stderr, logFormatIn(args))
	fs := c.newFlags()
	body := c.bind(fs)
	lf := bindLog(fs)
	reads := readsConfig(fs) // before once hides the knobs' types
	twice := once(fs)
	pos, err := parseInterspersed(fs, args)
	var asValue, asDir, emptyFlag error
	if err == nil {
		asValue, emptyFlag = flagForAValue(fs, args), emptyStoreFlag(fs)
		if len(pos) == 0 && c.maxArgs > 0 && c.arg() == "DIR" {
			asDir = dirForAValue(fs, args, os.Getenv)
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		// A help text is read-only, whichever command's: a reader gone
		// ends it by SIGPIPE, as 'sessdb help CMD'. So it is written
		// before the signal is ignored, which cannot be undone.
		return rep.writeHelp(stdout, c.helpText())
	}
	if c.changes {
		surviveBrokenPipes()
	}
	switch {
	case *twice != "":
		return rep.usage(fmt.Errorf("--%s is given more than once: give each flag once", *twice))
	case err != nil:
		return rep.usage(errors.New(briefFlagError(err.Error())))
	case asValue != nil:
		return rep.usage(asValue)
	case asDir != nil:
		return rep.usage(asDir)
	case c.minArgs == 1 && c.maxArgs == 1 && len(pos) != 1:
		return rep.usage(fmt.Errorf("want exactly one %s, got %s", c.arg(), plural(len(pos), "argument")))
	case len(pos) > c.maxArgs:
		return rep.usage(fmt.Errorf("unexpected argument %s", brief(pos[c.maxArgs])))
	case slices.Contains(pos, ""):
		// "$DIR" with DIR unset: taken as absent, a walk would go to
		// PI_SESSIONS_DIR, another root than the one named.
		return rep.usage(fmt.Errorf("the %s argument is empty (a variable not set?): %s", c.arg(), c.emptyArgHint()))
	case emptyFlag != nil:
		return rep.usage(emptyFlag)
	}
	if err := rep.configure(lf); err != nil {
		return rep.usage(err)
	}
	if reads {
		for _, w := range unknownEnv(os.Environ()) {
			rep.warn(w)
		}
	}
	return body(&invocation{cmd: c, fs: fs, args: pos, stdout: stdout, stderr: rep.stderr, rep: rep})
}

// storeFlags are the flags that name the store a command acts on, each
// with what it names and the variable it wins over.
var storeFlags = []struct{ name, what, env string }{
	{"sessions-dir", "the sessions root", "PI_SESSIONS_DIR"},
	{"etcd-endpoints", "the fleet's etcd endpoints", "PI_SESSIONS_ETCD_ENDPOINTS"},
	{"etcd-prefix", "the fleet's key prefix", "PI_SESSIONS_ETCD_PREFIX"},
	{"transcripts-dir", "the fleet's transcripts dir", "PI_SESSIONS_TRANSCRIPTS_DIR"},
}

// emptyStoreFlag refuses a flag of storeFlags given empty ("$ROOT" with
// ROOT unset): a knob's empty flag counts as not given, so its variable,
// or the default, would name the store, another one than the flag was
// meant to, as an empty DIR argument would (reap removing another root's
// expired keys).
func emptyStoreFlag(fs *flag.FlagSet) error {
	for _, sf := range storeFlags {
		if f := fs.Lookup(sf.name); f != nil && f.Value.String() == "" && flagGiven(fs, sf.name) {
			return fmt.Errorf("--%s is empty (a variable not set?): name %s, or leave the flag out for %s", sf.name, sf.what, sf.env)
		}
	}
	return nil
}

// emptyArgHint says what to give instead of an empty positional argument.
func (c *command) emptyArgHint() string {
	if c.arg() == "DIR" {
		return "name the sessions root, or leave the argument out for --sessions-dir or PI_SESSIONS_DIR"
	}
	return "give a " + c.arg()
}

// arg names the command's positional argument.
func (c *command) arg() string {
	if c.argName == "" {
		return "DIR"
	}
	return c.argName
}

// once makes every flag of fs refuse a second value, so that a flag given
// twice ("--ttl-days 30 ... --ttl-days 3", a second --accept) is a usage
// error, not the last value winning in silence: it wraps each flag's
// Value before the arguments are parsed. The name of the first flag given
// twice is left in the string it returns. (A variable cannot be given
// twice; the flag that wins over it can.)
func once(fs *flag.FlagSet) *string {
	twice := new(string)
	fs.VisitAll(func(f *flag.Flag) {
		v := &onceValue{Value: f.Value, name: f.Name, twice: twice}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = onceBool{v} // --json stays a flag without a value
			return
		}
		f.Value = v
	})
	return twice
}

// onceValue is a flag's Value that takes one Set.
type onceValue struct {
	flag.Value
	name  string
	set   bool
	twice *string
}

func (o *onceValue) Set(s string) error {
	if o.set {
		if *o.twice == "" {
			*o.twice = o.name
		}
		return errors.New("given more than once")
	}
	o.set = true
	return o.Value.Set(s)
}

type onceBool struct{ *onceValue }

func (onceBool) IsBoolFlag() bool { return true }

// parseInterspersed parses flags anywhere among the positional arguments,
// which it returns in order. The flag package stops at the first
// positional argument; parsing resumes after it. After "--" everything is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// flagForAValue refuses a flag given as a word of its own ("--pi-version
// X") whose value X is itself one of fs's flags ("--allow-rewrite",
// "-json", "--log-level=info"): the value was left out (an unquoted
// variable that was empty), and the flag package took the next flag for
// it, which then is off without a word while the first holds its name.
// The same for -h and --help (asksForHelp). "--pi-version=--allow-rewrite"
// gives such a value on purpose.
func flagForAValue(fs *flag.FlagSet, args []string) error {
	return separateValues(fs, args, func(f *flag.Flag, v string) error {
		if namedFlag(fs, v) != nil || asksForHelp(fs, v) {
			return fmt.Errorf("--%s: %s is a flag, not a value (a variable left empty?): give --%s its value (--%s=VALUE for one that begins with a dash)", f.Name, brief(v), f.Name, f.Name)
		}
		return nil
	})
}

// stampFlags are the flags whose value is a job's stamp, never a path:
// what each names, and whether any "/" makes a value a path (a pi version
// is an npm version, which never holds one; a model's PROVIDER/ID does).
var stampFlags = map[string]struct {
	what    string
	noSlash bool
}{
	"pi-version": {"a pi version", true},
	"venue":      {"a venue", false},
	"model":      {"a model", false},
}

// dirForAValue refuses, for a command given no DIR argument, a stamp flag
// given as a word of its own whose value is written as a path: "/…",
// "./…", "../…", "…/" (a directory as a shell completes it), "." or "..",
// or for a pi version any "/". That is the DIR argument, taken for a value
// left out before it ("--pi-version $V DIR", V empty and unquoted), and
// the command would act on the configured root instead of DIR. No venue,
// model (the legacy identity begins with a letter or digit, and a
// PROVIDER/ID ends with its ID) or pi version is written so, and
// "--pi-version=VALUE", or a DIR argument given, shows nothing was taken.
//
// The same for the fleet's paths, which take any path (migrate acts on a
// sessions root and a fleet at once): a key prefix or transcripts dir
// given so that names the sessions root the command acts on (its
// --sessions-dir, or PI_SESSIONS_DIR) is that DIR taken ("migrate --to
// etcd --etcd-prefix $P /srv/sessions" migrated the root under the
// prefix "/srv/sessions"). No prefix or transcripts dir is the root
// itself; one that names another directory cannot be told from DIR.
func dirForAValue(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	return separateValues(fs, args, func(f *flag.Flag, v string) error {
		if fleetPathFlags[f.Name] {
			if root := sessionsRoot(fs, getenv); root == "" || !sameDir(v, root) {
				return nil
			}
			return fmt.Errorf("--%s: %s is the sessions root, and no DIR was given: a value left out before DIR (a variable left empty?) took DIR for it; give --%s its value (--%s=VALUE to give it as written)", f.Name, quoteName(v), f.Name, f.Name)
		}
		s, ok := stampFlags[f.Name]
		if !ok {
			return nil
		}
		path := v == "." || v == ".." || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasSuffix(v, "/")
		if !path && !(s.noSlash && strings.Contains(v, "/")) {
			return nil
		}
		return fmt.Errorf("--%s: %s is a path, not %s, and no DIR was given: a value left out before DIR (a variable left empty?) took DIR for it; give --%s its value (--%s=VALUE for one written as a path)", f.Name, quoteName(v), s.what, f.Name, f.Name)
	})
}

// fleetPathFlags are the fleet's flags whose value may be any path (see
// dirForAValue).
var fleetPathFlags = map[string]bool{"etcd-prefix": true, "transcripts-dir": true}

// sessionsRoot is the sessions root fs's command acts on without a DIR
// argument, as given (its --sessions-dir, or PI_SESSIONS_DIR), or "".
func sessionsRoot(fs *flag.FlagSet, getenv func(string) string) string {
	if f := fs.Lookup("sessions-dir"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return getenv("PI_SESSIONS_DIR")
}

// sameDir reports whether the paths a and b name one directory: the same
// name once cleaned ("/srv/sessions/" and "/srv/sessions"), or, each
// found, the same file ("sessions" from the working directory).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	x, err := os.Stat(a)
	if err != nil {
		return false
	}
	y, err := os.Stat(b)
	return err == nil && os.SameFile(x, y)
}

// separateValues calls each, in order, for every flag of fs given its
// value as the next word ("--pi-version X", not "--pi-version=X"), with
// that word, and returns the first error. It runs once the arguments have
// parsed, so every name in args before "--" is a flag of fs.
func separateValues(fs *flag.FlagSet, args []string, each func(f *flag.Flag, value string) error) error {
	for i := 0; i < len(args)-1; i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		f := namedFlag(fs, a)
		if f == nil || strings.Contains(a, "=") {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if err := each(f, args[i+1]); err != nil {
			return err
		}
		i++ // its value
	}
	return nil
}

// asksForHelp reports whether the word a asks for help (isHelpWord), which
// the flag package takes for a request for help when fs defines no flag of
// that name: left as a value ("--pi-version $V -h", V empty), the help
// asked for was a pi version stamped "-h".
func asksForHelp(fs *flag.FlagSet, a string) bool {
	return isHelpWord(a) && fs.Lookup(flagWord(a)) == nil
}

// namedFlag is the flag of fs that the word a names ("-x", "--x",
// "--x=v"), or nil when a names none.
func namedFlag(fs *flag.FlagSet, a string) *flag.Flag {
	if name := flagWord(a); name != "" {
		return fs.Lookup(name)
	}
	return nil
}

// flagWord is the name the word a gives as a flag ("x" for "-x", "--x"
// and "--x=v"), or "" when a begins with no dash.
func flagWord(a string) string {
	name, ok := strings.CutPrefix(a, "-")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	name, _, _ = strings.Cut(name, "=")
	return name
}

// helpText is the command's whole help: the usage line, what it does, its
// flags, an example and its exit statuses.
func (c *command) helpText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: sessdb %s\n\n%s\n", c.usage, c.short)
	if c.long != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.long))
	}
	fs := c.newFlags()
	c.bind(fs)
	bindLog(fs)
	writeFlags(&b, fs)
	fmt.Fprintf(&b, "\nexample:\n%s\n", strings.TrimRight(c.example, "\n"))
	b.WriteString("\nexit status:\n")
	for _, code := range c.exits {
		b.WriteString(exitLine(code))
	}
	return b.String()
}

// flagGroups orders the flags of a help text: the command's own first,
// then the store's configuration, then the logging flags every command
// takes.
var flagGroups = []struct {
	title string
	names map[string]bool // nil: every flag not in another group
}{
	{"flags", nil},
	{"configuration flags (each wins over its environment variable)", configFlagNames},
	{"fleet flags (etcd and a shared transcripts dir; each wins over its variable)", fleetFlagNames},
	{"logging flags", map[string]bool{"log-level": true, "log-format": true}},
}

// writeFlags lists fs's flags in groups, each as "--name VALUE" over its
// wrapped help and its default.
func writeFlags(b *strings.Builder, fs *flag.FlagSet) {
	groupOf := func(name string) int {
		for i, g := range flagGroups {
			if g.names[name] {
				return i
			}
		}
		return 0
	}
	byGroup := make([][]*flag.Flag, len(flagGroups))
	fs.VisitAll(func(f *flag.Flag) { byGroup[groupOf(f.Name)] = append(byGroup[groupOf(f.Name)], f) })
	for i, flags := range byGroup {
		if len(flags) == 0 {
			continue
		}
		sort.Slice(flags, func(a, b int) bool { return flags[a].Name < flags[b].Name })
		fmt.Fprintf(b, "\n%s:\n", flagGroups[i].title)
		for _, f := range flags {
			value, usage := flag.UnquoteUsage(f)
			if value == "value" {
				value = "V"
			}
			if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool || value == "" {
				fmt.Fprintf(b, "  --%s\n", f.Name)
			} else {
				fmt.Fprintf(b, "  --%s %s\n", f.Name, value)
			}
			if d := f.DefValue; d != "" && d != "false" {
				usage += " (default " + d + ")"
			}
			b.WriteString(wrap(usage, "        ", 78))
		}
	}
}

// wrap breaks text into lines of at most width columns, each starting
// with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// flagGiven reports whether a flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
