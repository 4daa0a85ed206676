package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"sessdb/internal/sample"
	"sessdb/store"
)

// cliReference is docs/cli.md: the command table as a page. Each command's
// section is its helpText, the text 'sessdb help CMD' and 'sessdb CMD -h'
// print.
func cliReference() string {
	var b strings.Builder
	b.WriteString(`# sessdb command line

<!-- Generated from the command table (cmd/sessdb) by
     go test ./cmd/sessdb -run TestCLIReference -update
     Do not edit: TestCLIReference fails when this page and the table differ. -->

Every command is one row of sessdb's command table, which gives
` + "`sessdb help CMD`" + `, ` + "`sessdb CMD -h`" + ` and this page the same text. The JSON
objects the commands print are listed field by field in [json.md](json.md).

## Conventions

- **stdout carries only the result**: a table for people, or with ` + "`--json`" + `
  one JSON object per line for programs (resolve and promote always print
  JSON). A command that fails prints nothing there: no header, no partial
  summary.
- **stderr carries everything else**, in one format: with ` + "`--log-format json`" + `
  (or ` + "`auto`" + `, the default, when stderr is not a terminal) every line is a JSON
  object, errors included; with ` + "`console`" + ` an error is one plain line,
  ` + "`sessdb CMD: message`" + `. Each failure is reported once. ` + "`--log-format`" + ` and
  ` + "`--log-level`" + ` take their words in any case (` + "`JSON`" + `, ` + "`WARN`" + `), and only
  their words (no number for a level).
- **Arguments**: flags and the positional argument (DIR, FILE) go in any
  order (` + "`sessdb dump DIR --json`" + `); ` + "`--`" + ` ends the flags. A usage error is one
  line on stderr naming the flag or argument, with the hint
  ` + "`(run 'sessdb help CMD')`" + `, and exit status 2. A flag given more than once
  is such an error (the last value does not win in silence), and so is a
  job's value that is not valid UTF-8 (` + "`--job-dir`, `--venue`, `--pi-version`," + `
  ` + "`--job`" + `: its ticket and the key's history record them as text; a sessions
  root that is not, or that leads through a link to a name that is not,
  is a configuration error), and so is an empty DIR or FILE
  argument (` + "`\"$DIR\"`" + ` with DIR unset), which is never taken for the
  configured root; and so is a flag given for another's value
  (` + "`--pi-version --allow-rewrite`" + `: a value left out, which took the next
  flag; ` + "`-h` and `--help`" + ` count as flags there), where ` + "`--pi-version=VALUE`" + ` gives a value that is a flag's name (any
  other, one that begins with a dash included, is taken as given: ` + "`--venue -edge`" + `);
  and so is, with no DIR argument, a stamp (` + "`--pi-version`, `--venue`, `--model`" + `) given
  a path as a word of its own (` + "`/…`, `./…`, `../…`, `…/`, `.`, `..`" + `; for a pi version, any
  ` + "`/`" + `): ` + "`dump --as-job --pi-version $V DIR`" + ` with V empty took DIR for the pi
  version and judged the configured root (` + "`--pi-version=VALUE`" + ` gives such a
  value; a DIR without a ` + "`/`" + `, ` + "`sessions`" + `, cannot be told from a stamp, nor
  ` + "`data/sessions`" + ` from a venue or model); and so is, with no DIR argument, an
  ` + "`--etcd-prefix` or `--transcripts-dir`" + ` given as a word of its own that names the
  sessions root the command acts on (` + "`migrate --to etcd --etcd-prefix $P DIR`" + `
  migrated the root under the prefix DIR; one naming another directory cannot
  be told from DIR);
  and so is an empty value of a flag that names one thing to act on or at
  (` + "`dump --key \"\"`, `check --accept \"\"`, `--quarantine \"\"`, `--at \"\"`, `--svg \"\"`" + `),
  which never means every key or now.
  ` + "`-h`" + ` prints the command's help
  on stdout and exits 0. ` + "`sessdb help`" + ` lists the commands on stdout; a bare
  ` + "`sessdb`" + ` lists them on stderr and exits 2.
- **The sessions root** of a walking command is its DIR argument, else
  ` + "`--sessions-dir`" + `, else ` + "`PI_SESSIONS_DIR`" + `. A walk refuses (exit 2) the filesystem
  root, a directory anyone may write to without the sticky bit (its
  refusal gives the mend, ` + "`chmod +t`" + ` on the directory it leads to), and one
  owned by neither the user it runs as nor root (run as root, it walks a
  root whoever owns it). resolve and promote refuse the filesystem root
  too (exit 2, naming the flag or variable; so does a fleet job, as its
  transcripts dir): a key made there no walk could reach, and no reap
  expire. A root (on a fleet, a transcripts dir) anyone may write to
  without the sticky bit they take
  (refusing it would stop a deployment that works), each with one
  warning on stderr naming the flag or variable, the root and its mend,
  ` + "`chmod +t`" + ` on the directory it leads to (or ` + "`chmod o-w`" + `), a line
  to paste (the directory's name one shell word, in single quotes where
  it needs them), the verdict and exit status as they were. Every command refuses (exit 2, naming it) a
  sessions root that is a fleet's transcripts dir (it holds the fleet's
  mark, ` + "`.sessdb-fleet`" + `; [fleet.md](fleet.md)), and one that is a key
  dir (named as a key, or a link to one; it holds ` + "`meta.db`" + ` or ` + "`current.jsonl`" + `: a root
  set one level too deep).
- **Ctrl-C** (or SIGTERM, or SIGHUP: a closed terminal; a SIGHUP ignored
  from the start, under nohup, stays ignored) stops a walk (dump, stats,
  check, reap, migrate) within a second (migrate: once the keys under way
  are done; a transcript that check, dump --verify or migrate is reading
  is abandoned between two 1 MiB chunks, its key not printed): nothing new
  is started, what was done is printed and marked interrupted, and the exit
  status is 130. On a fleet that holds from before the walk connects to
  etcd: a signal while it logs in (which waits up to --etcd-timeout for a
  member) ends the wait, nothing done, the summary marked interrupted. A key under way that waits for its lock is waited for
  until it has it or gives up (2 s, check --repair twice; migrate 10 s),
  and on a fleet a key's delete (reap) or history renumber (check
  --repair) already sent is finished, within --etcd-timeout, and printed,
  so a stop can take that long; and a stop that comes once every entry has
  started, with no transcript being read, cuts nothing short: the run is
  complete, not marked interrupted,
  and its exit status is its own (1 for a key it could not lock). A second
  Ctrl-C kills the process at once, even as it writes what it holds: its
  stdout then stops wherever it was, mid-line included, with no summary
  line, and a shell reports a second Ctrl-C as 130 (128 + SIGINT), the
  status of a whole interrupted run, so a stream is whole only when its
  last line is its summary ([json.md](json.md#the-rules)).
- **A signal kills resolve and promote** (and engage replay) at once, as it
  kills any Unix tool: the worker sees the signal (a shell reports 128 + it, 143
  for SIGTERM and 130 for Ctrl-C; Python's returncode is -15 or -2), and
  nothing is on stdout, unless the signal came after the answer was
  written, in the moment before the process ends (the answer is then
  whole, and the work done: a worker acts only on the answer of a command
  that exited 0, and runs it again otherwise). The store is as a crash leaves it (a promotion
  committed whole or not at all); run the same command again: a resolve
  replaces the staged file and the ticket, a promote with the same ticket
  repeats a promotion that landed (` + "`\"repeat\":true`" + `) or makes it.
  engage replay's answer is many lines, written once the replay is done:
  a signal that comes while it writes them (a reader slow to read a long
  replay) cuts them where it finds them, mid-line included, with no
  summary line, so they are whole only when the last is the summary.
- **SIGQUIT** (` + "`Ctrl-\\`" + `) is Go's own, for every command: it prints
  ` + "`SIGQUIT: quit`" + ` and every goroutine's stack on stderr and exits 2, the
  status of a usage error (the exit status table says so; stderr tells
  them apart), a walk's summary unwritten. It is for a developer's look
  at a command that hangs, not a way to stop one: SIGTERM or Ctrl-C
  stops a walk with its summary. A resolve or promote so ended is as a
  crash leaves it: run it again (a promote with the same ticket repeats
  a promotion that had committed, or makes it).

## Exit status

The same table for every command; each command's help lists the rows it can
return.

` + "```text\n" + exitTable() + "```" + `

A stdout whose reader is gone (` + "`sessdb dump --json | head -c 10`" + `) ends a
command that only reads (dump, stats, engage replay, version, help) by
SIGPIPE, as it ends any Unix tool: the shell reports status 141 (128 + 13),
which is in no command's table, and nothing is written on stderr. So does
a stderr whose reader is gone, when such a command has a line to write
there (a warning, an error): ` + "`stats`" + ` whose stderr goes to a log shipper
that died stops at its first warning, its stdout cut where it was. A command
that writes the store (resolve, promote, check, reap, migrate) is never
killed by a broken pipe: a stdout it cannot write, its reader gone or a full
disk, is a fault, exit 1, reported on stderr once its work is done
(migrate stops as Ctrl-C stops it, the keys under way finished):
resolve's and promote's line names the key and the outcome, and the same
command run again reads the answer (a promote repeats); reap and check
--repair name each removal or repair they made
(` + "`..., but the report was not written on stdout`" + `); a stderr it cannot
write loses its lines, never its work or its answer. A full disk is a
fault, exit 1, for every command, and what stdout took before it filled
stays there, cut where the write failed, mid-line included, with no
summary line: a stream is whole only when its last line is its summary
(docs/json.md). A stdout closed with ` + "`>&-`" + ` is no error: a Go
program finds it reopened on /dev/null before its first instruction, so
the answer goes where ` + "`>/dev/null`" + ` sends it, exit 0. A caller that acts on
an answer must read it: exit 0 and one whole line (docs/json.md).

## Configuration

Every bound has a flag and an environment variable (the legacy names); the
flag wins. A flag given an empty value counts as not given (unset the
variable instead), but for the four that name the store (` + "`--sessions-dir`" + `,
` + "`--etcd-endpoints`, `--etcd-prefix`, `--transcripts-dir`" + `): given empty
(` + "`--sessions-dir \"$ROOT\"`" + ` with ROOT unset), each is a usage error, exit 2, as
an empty DIR argument is, where its variable would name another store. Integers are parsed strictly: ` + "`3.5`, `1e3`, `08`, `+3`" + ` and negative
values are configuration errors (exit 2, naming the variable). Whitespace
around a whole number, in a variable or a flag, is ignored (` + "`' 14'`" + `, a value
ending in a newline), as the legacy store trimmed it (JavaScript's ` + "`trim`" + `),
and so is whitespace around a duration (` + "`PI_SESSIONS_ETCD_TIMEOUT`" + `,
` + "`--etcd-timeout`" + `, ` + "`--grace`" + `, ` + "`--since`" + `, ` + "`--deep-check-timeout`" + `: ` + "`'5s\\n'`" + ` is
5s); a blank inside one (` + "`1 s`" + `) is still an error.
A sessions root is not trimmed: one whose name begins or ends with white
space (` + "`PI_SESSIONS_DIR=' '`" + `, an env file's trailing blank) is a
configuration error, exit 2, where it would be another directory, made
where sessdb runs; and so is one that begins with ` + "`~`" + ` or names a variable
(` + "`$HOME/sessions`, `${STATE_DIRECTORY}`, `$(STATE_DIR)`" + `; a sessions root or a
transcripts dir): only a shell expands them, and an env file, docker's
` + "`--env-file`" + `, a unit's ` + "`Environment=`" + ` or a Python env dict passes them as
written, as Kubernetes passes a ` + "`$(NAME)`" + ` whose NAME is not defined before it.
The fleet's key prefix and the files the configuration names
(` + "`PI_SESSION_MODELS_FILE`" + `, the etcd CA, certificate, key and password file)
are refused the same way, and for white space around them; the etcd
user's name for white space around it and for a variable.
So is a command substitution in backticks (` + "`` `pwd`/sessions ``" + `: a name
that holds two); one backtick alone, a syntax error to a shell, is a name.
So is a name, or the etcd user's, wholly in quotes (` + "`\"/srv/sessions\"`" + `, which docker's
` + "`--env-file`" + ` and Kubernetes pass as written): only a shell removes them; a
quote inside a name (` + "`it's`" + `) or one not closed is a name.
A ` + "`~`" + ` inside a name (` + "`kubernetes.io~empty-dir`" + `) and a ` + "`$`" + ` before anything but
a letter, ` + "`_`, `{` or `(`" + ` (` + "`share$`, `price$5`" + `) are names like any other.

A variable set to the empty string is unset: its default, not a zero
(` + "`PI_SESSIONS_TTL_DAYS=`" + ` is 14 days, not "keep every key"). A variable given
twice in one environment block (a worker that appends its value to the
environment it inherited and execs it raw) takes its first value, as C's
` + "`getenv`" + ` does (and Go's ` + "`os.Getenv`" + `, Python's ` + "`os.environ`" + `); a
language's environment API (a Python dict, Go's ` + "`exec.Cmd`" + `) passes only its
last, and so does a shell between (` + "`sh -c`" + `, a wrapper script: bash and dash
keep the last and export only it). Set each variable once. A relative sessions root is taken from the working
directory of each command, and the ticket records it absolute: a promote
run from a directory where the same name is another directory (or none)
exits 2, another sessions root, and writes nothing. Give workers an
absolute root.

| flag | variable | meaning |
|---|---|---|
`)
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	cfg := bindConfig(fs)
	for _, k := range []*knob{&cfg.sessionsDir, &cfg.bounds.ttlDays, &cfg.bounds.maxBytes, &cfg.bounds.maxAgeDays, &cfg.bounds.maxChain, &cfg.bounds.maxContextPct} {
		name, usage := flag.UnquoteUsage(fs.Lookup(k.flag))
		fmt.Fprintf(&b, "| `--%s %s` | `%s` | %s |\n", k.flag, name, k.env, strings.TrimSuffix(usage, " [$"+k.env+"]"))
	}
	b.WriteString(`
### A fleet

With etcd endpoints set, resolve, promote, dump, check and reap run on a
fleet: the records in etcd, the transcripts in a directory every worker
mounts ([fleet.md](fleet.md)). A sessions root given too (a DIR argument,
` + "`--sessions-dir`, `PI_SESSIONS_DIR`" + `) is a configuration error, and so is any of
these set without endpoints, a prefix that begins or ends with white
space (another namespace in etcd), and a user name that does (a login
etcd refuses). Endpoints that are blank (white space only: a template or
a secret that came out empty) are a configuration error too, in every
command that reads them, stats included, never taken as unset. The
password has no flag: a command line is readable by every user of the
host.

| flag | variable | meaning |
|---|---|---|
`)
	fk := bindFleet(fs)
	for _, k := range fk.all() {
		name, usage := flag.UnquoteUsage(fs.Lookup(k.flag))
		fmt.Fprintf(&b, "| `--%s %s` | `%s` | %s |\n", k.flag, name, k.env, strings.TrimSuffix(usage, " [$"+k.env+"]"))
	}
	fmt.Fprintf(&b, "\nEvery command that reads the configuration warns on stderr, once, about a\nvariable whose name starts `%s` but is not one sessdb reads, naming the\nclosest one it does (`PI_SESSIONS_MAX_CONTEXT_PCT`: did you mean\n`PI_SESSION_MAX_CONTEXT_PCT`?), and about any other a letter or two from\none it reads, or one in other case (`PI_SESSONS_TTL_DAYS`, `pi_sessions_dir`);\nnot about the legacy worker's own `PI_SESSIONS_ALLOW_GH_SOURCE` and\n`PI_SESSION_FILE`, which the worker keeps. The variables it reads: %s.\n", envPrefix, "`"+strings.Join(knownEnv(), "`, `")+"`")
	b.WriteString("\n## Commands\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "- [`sessdb %s`](#sessdb-%s): %s\n", c.name, strings.ReplaceAll(c.name, " ", "-"), c.short)
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "\n## sessdb %s\n\n```text\n%s```\n", c.name, c.helpText())
	}
	return b.String()
}

// docs/cli.md is the command table, word for word (rewritten with -update).
func TestCLIReference(t *testing.T) {
	p := filepath.Join("..", "..", "docs", "cli.md")
	got := cliReference()
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/sessdb -run TestCLIReference -update)", err)
	}
	if string(want) != got {
		t.Errorf("docs/cli.md differs from the command table: run go test ./cmd/sessdb -run TestCLIReference -update")
	}
}

// 'sessdb help CMD', 'sessdb CMD -h' and the golden help file say the same
// thing, on stdout, with exit 0; every flag the usage line names exists.
func TestHelpIsOneText(t *testing.T) {
	clearEnv(t)
	code, list, errs := runCLI(t, "help")
	if code != exitOK || errs != "" {
		t.Fatalf("help: exit %d, %q", code, errs)
	}
	golden(t, "help.txt", list)
	if code, out, errs := runCLI(t); code != exitUsage || out != "" || errs != list {
		t.Errorf("bare sessdb: exit %d, stdout %q; want the list on stderr and exit 2", code, out)
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		code, help, errs := runCLI(t, append([]string{"help"}, words...)...)
		if code != exitOK || errs != "" {
			t.Fatalf("help %s: exit %d, %q", c.name, code, errs)
		}
		code, h, errs := runCLI(t, append(words, "-h")...)
		if code != exitOK || errs != "" || h != help {
			t.Errorf("%s -h: exit %d, stderr %q, and the text differs from help %s", c.name, code, errs, c.name)
		}
		golden(t, "help-"+strings.ReplaceAll(c.name, " ", "-")+".txt", help)
		for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(c.usage, -1) {
			if !strings.Contains(help, "\n  --"+m[1]) {
				t.Errorf("%s: the usage line names --%s, which its flags do not list", c.name, m[1])
			}
		}
		for _, want := range []string{"usage: sessdb " + c.name, "\nexample:\n  ", "\nexit status:\n  0 ", "--log-format FORMAT"} {
			if !strings.Contains(help, want) {
				t.Errorf("help %s lacks %q", c.name, want)
			}
		}
	}
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "dump", "extra"}, {"nosuch"}, {"engage"}, {"engage", "rewind"}} {
		if code, out, errs := runCLI(t, args...); code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "(run 'sessdb help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with a hint", args, code, out, errs)
		}
	}
	if code, out, _ := runCLI(t, "help", "help"); code != exitOK || !strings.Contains(out, "commands:") && !strings.Contains(out, "dump") {
		t.Errorf("help help: exit %d\n%s", code, out)
	}
	// help is a command too, and -h asks what it is (issue 12: "-h exits
	// 0"); it said: unknown command "-h", exit 2.
	for _, h := range []string{"-h", "-help", "--help"} {
		if code, out, errs := runCLI(t, "help", h); code != exitOK || out != list || errs != "" {
			t.Errorf("help %s: exit %d, stderr %q; want the list on stdout and exit 0", h, code, errs)
		}
	}
	// -h goes anywhere, as for every command: after the command help is
	// asked about, or before it, or beside what names none. It said:
	// unexpected argument "-h", unknown command "-h", unknown command
	// "help", each exit 2.
	_, dumpHelp, _ := runCLI(t, "help", "dump")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "dump", "-h"}, dumpHelp},
		{[]string{"help", "--help", "dump"}, dumpHelp},
		{[]string{"help", "help", "-h"}, list},
		{[]string{"help", "dump", "extra", "-h"}, list},
		{[]string{"help", "nosuch", "-help"}, list},
	} {
		if code, out, errs := runCLI(t, c.args...); code != exitOK || out != c.want || errs != "" {
			t.Errorf("%v: exit %d, stdout %.40q, stderr %q; want exit 0 and %.40q", c.args, code, out, errs, c.want)
		}
	}
	for _, args := range [][]string{{"help", "engage"}, {"engage", "-h"}, {"engage", "--help"}} {
		if code, out, _ := runCLI(t, args...); code != exitOK || !strings.HasPrefix(out, "usage: sessdb engage replay") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

// version prints the build's version, revision, Go version and schemas;
// --version is the same command.
func TestVersion(t *testing.T) {
	fixBuildInfo(t)
	code, out, errs := runCLI(t, "version")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d %s", code, errs)
	}
	golden(t, "version.txt", out)
	if code, alias, _ := runCLI(t, "--version"); code != exitOK || alias != out {
		t.Errorf("--version: exit %d\n%s", code, alias)
	}
	code, out, _ = runCLI(t, "version", "--json")
	if code != exitOK {
		t.Fatalf("--json: exit %d", code)
	}
	golden(t, "version.json", out)
	var v versionOutput
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Revision == nil || *v.Revision != "0123456789abcdef0123456789abcdef01234567" || v.SchemaWrites != 2 || len(v.SchemaReads) != 2 {
		t.Errorf("version --json %s: %v", out, err)
	}
}

// A JSON field of docs/json.md: its JSON type and whether it may be null.
type docField struct {
	typ      string
	nullable bool
}

// readJSONReference parses docs/json.md: every "### `NAME`" heading and
// the table under it.
func readJSONReference(t *testing.T) map[string]map[string]docField {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]docField{}
	var cur map[string]docField
	row := regexp.MustCompile("^\\| `([a-z_0-9]+)` \\| ([a-z0-9_. ]+) \\| (yes|no) \\| ")
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "### `"); ok {
			name, _, _ = strings.Cut(name, "`")
			cur = map[string]docField{}
			objects[name] = cur
			continue
		}
		if strings.HasPrefix(line, "## ") {
			cur = nil
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != nil {
			cur[m[1]] = docField{typ: m[2], nullable: m[3] == "yes"}
		}
	}
	return objects
}

// jsonChecker checks decoded JSON values against docs/json.md's objects,
// and remembers which objects and fields it saw.
type jsonChecker struct {
	t       *testing.T
	objects map[string]map[string]docField
	seen    map[string]bool
	nonNull map[string]bool // "object.field" seen with a value
}

var (
	hexCRC  = regexp.MustCompile(`^[0-9a-f]{8}$`)
	moneyRE = regexp.MustCompile(`^-?[0-9]+\.[0-9]{4}$`)
)

func (c *jsonChecker) object(where, name string, v any) {
	c.t.Helper()
	fields, ok := c.objects[name]
	if !ok {
		c.t.Fatalf("%s: docs/json.md has no object %s", where, name)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		c.t.Errorf("%s: %s is %T, not an object", where, name, v)
		return
	}
	c.seen[name] = true
	for k := range obj {
		if _, ok := fields[k]; !ok {
			c.t.Errorf("%s: %s has field %q, which docs/json.md does not list", where, name, k)
		}
	}
	for k, f := range fields {
		val, ok := obj[k]
		switch {
		case !ok:
			c.t.Errorf("%s: %s lacks field %q (every documented field is always present)", where, name, k)
		case val == nil && !f.nullable:
			c.t.Errorf("%s: %s.%s is null; docs/json.md says it never is", where, name, k)
		case val != nil:
			c.nonNull[name+"."+k] = true
			c.value(where+": "+name+"."+k, f.typ, val)
		}
	}
}

func (c *jsonChecker) value(where, typ string, v any) {
	c.t.Helper()
	bad := func() { c.t.Errorf("%s: %v (%T) is not a %s", where, v, v, typ) }
	if elem, ok := strings.CutPrefix(typ, "array of "); ok {
		list, ok := v.([]any)
		if !ok {
			bad()
			return
		}
		for i, e := range list {
			c.value(fmt.Sprintf("%s[%d]", where, i), elem, e)
		}
		return
	}
	if name, ok := strings.CutPrefix(typ, "object "); ok {
		c.object(where, name, v)
		return
	}
	if _, ok := c.objects[typ]; ok { // "array of dump.history"
		c.object(where, typ, v)
		return
	}
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			bad()
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			bad()
		}
	case "integer":
		if n, ok := v.(json.Number); !ok || strings.ContainsAny(n.String(), ".eE") {
			bad()
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			bad()
		}
	case "usd":
		if n, ok := v.(json.Number); !ok || !moneyRE.MatchString(n.String()) {
			bad()
		}
	case "crc32c":
		if s, ok := v.(string); !ok || !hexCRC.MatchString(s) {
			bad()
		}
	case "time":
		s, ok := v.(string)
		tm, err := time.Parse(time.RFC3339Nano, s)
		if !ok || err != nil || !strings.HasSuffix(s, "Z") || tm.Location() != time.UTC {
			bad()
		}
	default:
		c.t.Errorf("%s: docs/json.md uses an unknown type %q", where, typ)
	}
}

// lines checks a command's stdout: each line is the object item, and the
// last one, when summary is set, {"summary": summary}.
func (c *jsonChecker) lines(what, out, item, summary string) {
	c.t.Helper()
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		c.t.Errorf("%s: no output", what)
		return
	}
	for i, l := range ls {
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			c.t.Errorf("%s line %d: %v: %s", what, i+1, err, l)
			continue
		}
		where := fmt.Sprintf("%s line %d", what, i+1)
		if summary != "" && i == len(ls)-1 {
			m, ok := v.(map[string]any)
			if !ok || len(m) != 1 || m["summary"] == nil {
				c.t.Errorf("%s: the last line is not {\"summary\": ...}: %s", where, l)
				continue
			}
			c.object(where, summary, m["summary"])
			continue
		}
		c.object(where, item, v)
	}
}

// Every command's JSON, run on the shipped sample, a damaged copy, a
// legacy root and the shared pi fixtures, has exactly the fields
// docs/json.md lists, with its types and its null rule; and every object
// docs/json.md lists was seen.
func TestJSONReference(t *testing.T) {
	c := &jsonChecker{t: t, objects: readJSONReference(t), seen: map[string]bool{}, nonNull: map[string]bool{}}
	if len(c.objects) < 20 {
		t.Fatalf("docs/json.md: %d objects parsed", len(c.objects))
	}
	atSampleTime(t)
	root := copySample(t)
	damaged := copySample(t)
	damageSample(t, damaged)
	stray := filepath.Join(root, sample.Resumable, ".meta.db.tmp-0000000000000abc")
	os.WriteFile(stray, nil, 0o600)
	then := sample.Time.Add(-2 * time.Hour)
	os.Chtimes(stray, then, then)
	// A meta page zeroed, for the page's error.
	if f, err := os.OpenFile(filepath.Join(root, sample.LongChain, "meta.db"), os.O_RDWR, 0); err == nil {
		f.WriteAt(make([]byte, 1024), 0)
		f.Close()
	}
	for _, r := range []string{root, damaged} {
		for _, args := range [][]string{
			{"dump", "--json", "--verify", "--history", "64"},
			{"dump", "--json", "--as-job", "--pi-version", "0.58.3", "--venue", "local", "--max-bytes", "1000"},
			{"check", "--json"},
			{"reap", "--json", "--dry-run"},
		} {
			_, out, _ := runCLI(t, append(args, r)...)
			item := map[string]string{"dump": "dump.entry", "check": "check.finding", "reap": "reap.action"}[args[0]]
			c.lines(strings.Join(args, " "), out, item, strings.Split(item, ".")[0]+".summary")
		}
	}
	for _, r := range []string{root, damaged} {
		_, out, _ := runCLI(t, "stats", "--json", r)
		c.lines("stats --json", out, "stats", "")
	}
	_, out, _ := runCLI(t, "check", "--json", "--repair", damaged)
	c.lines("check --repair", out, "check.finding", "check.summary")

	// The guard rails: a key reap refuses, what an interrupted reap left,
	// the operator's accept and quarantine, and the history they leave.
	guarded := copySample(t)
	os.MkdirAll(filepath.Join(guarded, sample.Expired, "notes"), 0o700)
	os.MkdirAll(filepath.Join(guarded, store.ReapedPrefix+sample.Legacy+"-0123456789abcdef"), 0o700)
	p := filepath.Join(guarded, sample.LongChain, "current.jsonl")
	if b, err := os.ReadFile(p); err == nil {
		os.WriteFile(p, append(b, '\n'), 0o600)
	}
	for _, args := range [][]string{
		{"reap", "--json"},
		{"check", "--json", "--repair", "--accept", sample.LongChain},
		{"check", "--json", "--repair", "--quarantine", sample.Mixed},
		{"check", "--json"},
	} {
		_, out, _ := runCLI(t, append(args, guarded)...)
		item := map[string]string{"check": "check.finding", "reap": "reap.action"}[args[0]]
		c.lines(strings.Join(args, " "), out, item, strings.Split(item, ".")[0]+".summary")
	}
	_, out, _ = runCLI(t, "dump", "--json", "--history", "64", "--key", sample.LongChain, guarded)
	if !strings.Contains(out, `"outcome":"accepted"`) {
		t.Errorf("dump after an accept shows no accepted entry: %s", out)
	}
	c.lines("dump after an accept", out, "dump.entry", "dump.summary")

	for _, args := range [][]string{{"--dry-run"}, {}, {"--to-legacy"}} {
		legacy, _, _, _ := legacyRoot(t)
		_, out, _ := runCLI(t, append(append([]string{"migrate", "--json"}, args...), legacy)...)
		c.lines("migrate "+strings.Join(args, " "), out, "migrate.report", "migrate.summary")
		if len(args) == 0 { // and back
			_, out, _ = runCLI(t, "migrate", "--json", "--to-legacy", legacy)
			c.lines("migrate --to-legacy", out, "migrate.report", "migrate.summary")
		}
	}

	for _, o := range jobScenario(t, copySample(t)) {
		c.lines(o.what, o.out, strings.Fields(o.what)[0], "")
	}

	fixBuildInfo(t)
	_, out, _ = runCLI(t, "version", "--json")
	c.lines("version --json", out, "version", "")
	buildInfo = func() (*debug.BuildInfo, bool) { return nil, false }
	_, out, _ = runCLI(t, "version", "--json")
	c.lines("version --json, no build info", out, "version", "")

	damaged = copySample(t) // the first was repaired
	damageSample(t, damaged)
	for _, args := range [][]string{{"dump", "--bogus"}, {"dump", "/nonexistent/root"}, {"nosuch"}, {"reap", "--dry-run", damaged}} {
		_, _, errs := runCLI(t, append(args, "--log-format", "json")...)
		c.lines(strings.Join(args, " ")+" stderr", errs, "stderr.line", "")
	}

	if p := engageFixturePath(); p != "" {
		_, out, _ := runCLI(t, "engage", "replay", "--json", p)
		c.lines("engage replay", out, "engage.request", "engage.summary")
		_, out, _ = runCLI(t, "engage", "replay", "--json", "--pruned-ratio", "0.7", "--cache-read-price", "0.30", "--cache-write-price", "3.75", p)
		c.lines("engage replay modelled", out, "engage.request", "engage.summary")
	} else {
		delete(c.objects, "engage.request")
		delete(c.objects, "engage.summary")
		t.Log("the shared pi fixtures are absent: engage replay's JSON is not checked")
	}

	// A root to move into the fleet below: its legacy keys into meta.db
	// first, as fleet.md says.
	toEtcd := copySample(t)
	if code, out, errs := runCLI(t, "migrate", toEtcd); code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}

	// A fleet prints the same objects, with a fleet's own values (file,
	// remove-orphan) set: last, since its connection is in the
	// environment from here on.
	walkedFleet(t)
	for _, args := range [][]string{
		{"dump", "--json", "--verify", "--history", "64"},
		{"check", "--json"},
		{"reap", "--json", "--dry-run"},
		{"check", "--json", "--repair"},
		{"reap", "--json"},
	} {
		_, out, _ := runCLI(t, args...)
		item := map[string]string{"dump": "dump.entry", "check": "check.finding", "reap": "reap.action"}[args[0]]
		c.lines("fleet "+strings.Join(args, " "), out, item, strings.Split(item, ".")[0]+".summary")
	}
	// resolve, promote and migrate --to etcd / --from etcd on a fleet print
	// the objects a sessions root's do: the job contract as on the root
	// (a repeat, a superseded rival, a refusal), a root moved in twice (a
	// migrate, then already) and the fleet moved out into a root.
	for _, o := range jobScenarioOn(t) {
		c.lines("fleet "+o.what, o.out, strings.Fields(o.what)[0], "")
	}
	fromEtcd := t.TempDir()
	for _, args := range [][]string{
		{"migrate", "--json", "--to", "etcd", "--dry-run", toEtcd},
		{"migrate", "--json", "--to", "etcd", toEtcd},
		{"migrate", "--json", "--to", "etcd", toEtcd},
		{"migrate", "--json", "--from", "etcd", fromEtcd},
	} {
		_, out, _ := runCLI(t, args...)
		c.lines("fleet "+strings.Join(args[:len(args)-1], " "), out, "migrate.report", "migrate.summary")
	}

	var missing, neverSet []string
	for name, fields := range c.objects {
		if !c.seen[name] {
			missing = append(missing, name)
		}
		for f, d := range fields {
			if d.nullable && c.seen[name] && !c.nonNull[name+"."+f] {
				neverSet = append(neverSet, name+"."+f)
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(neverSet)
	if len(missing) > 0 {
		t.Errorf("objects docs/json.md lists that no run printed: %v", missing)
	}
	// A nullable field never seen with a value would have its type
	// unchecked: the runs above give every one a value somewhere.
	if len(neverSet) > 0 {
		t.Errorf("nullable fields no run printed with a value: %v", neverSet)
	}
}

// fixBuildInfo makes version report a fixed build, whatever built the
// test binary.
func fixBuildInfo(t *testing.T) {
	prev := buildInfo
	t.Cleanup(func() { buildInfo = prev })
	buildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "sessdb", Version: "v0.12.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-29T09:00:00+01:00"},
			{Key: "vcs.modified", Value: "false"},
		}}, true
	}
}

// jobOutput is one resolve or promote of jobScenario: what it was and its
// stdout, with the job dir's path made fixed.
type jobOutput struct{ what, out string }

// jobScenario runs the job contract on a copy of the sample and returns
// every resolve and promote output: a warm resolve, a promotion, its
// retry (a repeat), a rival superseded, a cold resolve promoted too large,
// and a staged file removed before its promote.
func jobScenario(t *testing.T, root string) []jobOutput {
	t.Helper()
	return jobScenarioOn(t, "--sessions-dir", root)
}

// jobScenarioOn is jobScenario on the store the arguments name, or with
// none, on the one the environment names (a fleet's).
func jobScenarioOn(t *testing.T, where ...string) []jobOutput {
	t.Helper()
	var outs []jobOutput
	jobs := t.TempDir()
	cli := func(what string, args ...string) {
		t.Helper()
		code, out, errs := runCLI(t, append(args, where...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", what, code, out, errs)
		}
		outs = append(outs, jobOutput{what, strings.ReplaceAll(out, jobs, "JOBS")})
	}
	resolve := func(job, key string) string {
		dir := filepath.Join(jobs, job)
		cli("resolve "+job, "resolve", "--key", key, "--job-dir", dir, "--pi-version", "0.58.3", "--venue", "local", "--job", job)
		return dir
	}
	promote := func(what, dir string, extra ...string) {
		cli("promote "+what, append([]string{"promote", "--job-dir", dir, "--pi-version", "0.58.3"}, extra...)...)
	}
	a, b := resolve("job-a", sample.Resumable), resolve("job-b", sample.Resumable)
	appendAnswered(t, a, "a")
	appendAnswered(t, b, "b")
	promote("job-a", a)
	promote("job-a again", a)
	promote("job-b", b)
	c := resolve("job-c", store.Key("github", "acme/widget", "pi/issue-404"))
	appendAnswered(t, c, "c")
	promote("job-c", c, "--max-bytes", "100")
	d := resolve("job-d", store.Key("github", "acme/widget", "pi/issue-405"))
	os.Remove(filepath.Join(d, store.StagedDirName, store.TranscriptName))
	promote("job-d", d)
	return outs
}

// appendAnswered appends a user turn and its answer to a job's staged
// transcript (a header first, on a cold start).
func appendAnswered(t *testing.T, job, text string) {
	t.Helper()
	p := filepath.Join(job, store.StagedDirName, store.TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		data = []byte(header)
	}
	data = append(data, `{"type":"message","id":"u-`+text+`","parentId":null,"timestamp":"2026-11-29T10:00:01.000Z","message":{"role":"user","content":"`+text+`"}}`+"\n"...)
	data = append(data, `{"type":"message","id":"a-`+text+`","parentId":"u-`+text+`","timestamp":"2026-11-29T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":100,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":110},"stopReason":"stop"}}`+"\n"...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHelpExamplesSetTheVariablesTheyUse holds each command's example to
// the promise its field states: every line runs as shown, pasted into a
// shell. A variable the example uses but never sets expands to nothing:
// stats' --prometheus line wrote "> $DIR/.sessdb.prom.tmp", which with DIR
// unset is a file in / (refused as a worker, written as root).
func TestHelpExamplesSetTheVariablesTheyUse(t *testing.T) {
	quoted := regexp.MustCompile(`'[^']*'`)
	use := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
	for _, c := range commands {
		text := quoted.ReplaceAllString(c.example, "''")
		seen := map[string]bool{}
		for _, m := range use.FindAllStringSubmatchIndex(text, -1) {
			name := text[m[2]:m[3]]
			set := regexp.MustCompile(`(^|[\s;(])` + name + `=`).FindStringIndex(text)
			if (set == nil || set[0] > m[0]) && !seen[name] {
				seen[name] = true
				t.Errorf("sessdb %s's example uses $%s, which it does not set first:\n%s", c.name, name, c.example)
			}
		}
	}
}

// A binary with no VCS stamp says so without naming one cause: one built
// in a checkout with -buildvcs=false (GOFLAGS in a go env file, CI images)
// was told "not built from a VCS checkout", which sends an operator
// comparing binaries during an upgrade looking for the wrong mistake.
func TestVersionUnstampedNamesBothCauses(t *testing.T) {
	prev := buildInfo
	t.Cleanup(func() { buildInfo = prev })
	buildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "sessdb", Version: "(devel)"}}, true
	}
	code, out, errs := runCLI(t, "version")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d %s", code, errs)
	}
	if !strings.Contains(out, "\nrevision  unknown (") || !strings.Contains(out, "outside a VCS checkout") || !strings.Contains(out, "-buildvcs=false") {
		t.Errorf("an unstamped build's revision line names one cause, or none:\n%s", out)
	}
}
