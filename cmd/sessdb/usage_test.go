package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sessdb/internal/shellquote"
	"sessdb/internal/testfs"
)

// A bad value is quoted in an error only as far as a short prefix and its
// length: a 100 KB environment value or flag still makes one short line
// (issue 15.9: it was echoed whole).
func TestErrorsQuoteABoundedPrefix(t *testing.T) {
	huge := strings.Repeat("9", 100<<10) + "x"
	root := t.TempDir()
	for _, c := range []struct {
		env  string
		args []string
	}{
		{"PI_SESSIONS_TTL_DAYS", []string{"dump", root}},
		{"PI_SESSION_MAX_BYTES", []string{"check", root}},
		{"PI_SESSION_MAX_CONTEXT_PCT", []string{"reap", root}},
		{"PI_SESSION_MAX_AGE_DAYS", []string{"resolve", "--sessions-dir", root, "--key", strings.Repeat("a", 32), "--job-dir", root, "--pi-version", "1"}},
		{"", []string{"dump", "--history", huge, root}},
		{"", []string{"dump", "--key", huge, root}},
		{"", []string{"check", "--deep-check-timeout", huge, root}},
		{"", []string{"check", "--log-level", huge, root}},
		{"", []string{"check", root, huge}},
		{"", []string{"migrate", "--workers", huge, root}},
		{"", []string{"dump", "--json=" + huge, root}},
		{"", []string{"dump", "--" + huge}},
		{"", []string{"dump", "-" + huge + "=1"}},
		{"", []string{huge}},
	} {
		clearEnv(t)
		if c.env != "" {
			t.Setenv(c.env, huge)
		}
		code, out, errs := runCLI(t, c.args...)
		name := c.env
		if name == "" {
			name = strings.Join(c.args, " ")
			name = name[:min(len(name), 40)]
		}
		if code != exitUsage || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want exit 2", name, code, out[:min(len(out), 200)])
		}
		if len(errs) > 400 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "…(10240") {
			t.Errorf("%s: want one short line quoting a prefix and the length; got %d bytes: %.300q", name, len(errs), errs)
		}
	}
}

// A flag that does not parse is one line on stderr, naming the flag, with
// a hint, and exit 2: not the whole usage (issue 15.9). -h still prints the
// usage, and 'sessdb help CMD' prints it on stdout.
func TestFlagErrorsAreOneLine(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		cmd  string
		args []string
		flag string
		own  string // a flag of the command, which its usage lists
	}{
		{"resolve", []string{"resolve", "--bogus"}, "-bogus", "-job-dir"},
		{"promote", []string{"promote", "--context-tokens"}, "-context-tokens", "-context-tokens"},
		{"dump", []string{"dump", "--verify=maybe"}, "-verify", "-verify"},
		{"check", []string{"check", "--deep-check-timeout", "soon"}, "-deep-check-timeout", "-repair"},
		{"reap", []string{"reap", "--dry-run=2"}, "-dry-run", "-dry-run"},
		{"migrate", []string{"migrate", "--nope", "x"}, "-nope", "-to-legacy"},
		{"engage", []string{"engage", "replay", "--window", "wide", "f"}, "-window", "-pruned-ratio"},
	} {
		code, out, errs := runCLI(t, c.args...)
		want := "(run 'sessdb help " + c.cmd + "')\n"
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "sessdb "+c.cmd) ||
			!strings.Contains(errs, c.flag) || !strings.HasSuffix(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %s ending %q", c.args, code, errs, c.flag, want)
		}
		code, out, errs = runCLI(t, "help", c.cmd)
		if code != exitOK || errs != "" || !strings.Contains(out, "usage: sessdb "+c.cmd) || !strings.Contains(out, c.own) {
			t.Errorf("help %s: exit %d, stdout %q, stderr %q; want the usage with its flags", c.cmd, code, out, errs)
		}
		help := []string{c.cmd, "-h"}
		if c.cmd == "engage" {
			help = []string{"engage", "replay", "-h"}
		}
		// -h exits 0 and prints the same help on stdout, for every command
		// (issue 12: resolve and promote exited 2, and it went to stderr).
		if code, hout, errs := runCLI(t, help...); code != exitOK || errs != "" || hout != out {
			t.Errorf("%v: exit %d, stderr %q; want exit 0 and the help of 'sessdb help %s' on stdout", help, code, errs, c.cmd)
		}
	}
}

// Every walking command refuses the filesystem root however it is spelled,
// and a root anyone may write to without the sticky bit: exit 2, naming
// it, before reading anything (issue 15.9: PI_SESSIONS_DIR=/ walked the
// whole filesystem).
func TestWalksRefuseAnUnsafeRoot(t *testing.T) {
	link := filepath.Join(t.TempDir(), "to-root")
	os.Symlink("/", link)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	// A link to a directory one below "/", and its "..": "/" to the kernel,
	// though cleaned it is the link's own dir.
	one := filepath.Join(t.TempDir(), "to-etc")
	os.Symlink("/etc", one)
	// Links to "/" whose resolution into one path is past PATH_MAX: where
	// it leads cannot be told, and it is refused (it was walked).
	past := testfs.PastPathMax(t, t.TempDir(), "/")
	for _, root := range []string{"/", "/.", "//", "/tmp/..", link, one + "/..", open, past} {
		for _, args := range [][]string{{"dump"}, {"dump", "--verify"}, {"stats"}, {"stats", "--prometheus"}, {"check"}, {"check", "--repair"}, {"reap"}, {"reap", "--dry-run"}, {"migrate", root}, {"migrate", "--to-legacy", root}} {
			clearEnv(t)
			t.Setenv("PI_SESSIONS_DIR", root)
			code, out, errs := runCLI(t, args...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "sessions root "+strconv.Quote(root)) || strings.Count(errs, "\n") != 1 || len(errs) > 1000 {
				t.Errorf("%v on %s: exit %d, stdout %.200q, stderr %q; want exit 2 naming the root", args, root, code, out, errs)
			}
			// The open root's refusal gives its mend, as resolve's warning
			// of it does.
			if mend := "chmod +t " + shellquote.Word(open) + " (or chmod o-w)"; root == open && !strings.Contains(errs, mend) {
				t.Errorf("%v on %s: stderr %q; want the mend, %s", args, root, errs, mend)
			}
		}
	}
	// A relative root whose working directory is gone: the kernel still
	// takes its "..", and where it leads cannot be told.
	testfs.ChdirGone(t, t.TempDir())
	if code, out, errs := runCLI(t, "dump", ".."); code != exitUsage || out != "" || !strings.Contains(errs, "where it leads cannot be told") {
		t.Errorf("dump .. from a working directory that is gone: exit %d, stdout %.200q, stderr %q; want exit 2", code, out, errs)
	}
	// The sticky bit makes a shared directory safe enough: it is walked.
	os.Chmod(open, 0o777|os.ModeSticky)
	if code, out, errs := runCLI(t, "check", open); code != exitOK {
		t.Errorf("a sticky world-writable root: exit %d\n%s%s", code, out, errs)
	}
}

// A root owned by another user is refused, unless sessdb runs as root (an
// operator auditing a worker's root) or the owner is root.
func TestWalksRefuseARootOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another uid")
	}
	clearEnv(t)
	root := t.TempDir()
	if err := os.Chown(root, 4243, 4243); err != nil {
		t.Fatal(err)
	}
	prev := geteuid
	defer func() { geteuid = prev }()
	for euid, want := range map[int]int{4242: exitUsage, 4243: exitOK, 0: exitOK} {
		geteuid = func() int { return euid }
		code, _, errs := runCLI(t, "dump", root)
		if code != want || want == exitUsage && !strings.Contains(errs, "owned by uid 4243") {
			t.Errorf("euid %d: exit %d, want %d: %s", euid, code, want, errs)
		}
	}
}

// A flag given twice is a usage error naming it, in every command and for
// every flag: the last value used to win without a word (check --repair
// --accept K1 --accept K2 accepted K2 alone and exited 0).
func TestAFlagGivenTwiceIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	for _, c := range commands {
		fs := c.newFlags()
		c.bind(fs)
		bindLog(fs)
		fs.VisitAll(func(f *flag.Flag) {
			args := strings.Fields(c.name)
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				args = append(args, "--"+f.Name, "--"+f.Name+"=false")
			} else {
				v := f.DefValue
				if v == "" {
					v = "1"
				}
				args = append(args, "--"+f.Name, v, "--"+f.Name+"="+v)
			}
			code, out, errs := runCLI(t, append(args, root)...)
			if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--"+f.Name+" is given more than once") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --%s", args, code, out, errs, f.Name)
			}
		})
	}
	key := strings.Repeat("a", 32)
	code, _, errs := runCLI(t, "check", "--repair", "--accept", key, "--accept", strings.Repeat("b", 32), root)
	if code != exitUsage || !strings.Contains(errs, "--accept is given more than once") {
		t.Errorf("check --accept twice: exit %d, %q", code, errs)
	}
}
