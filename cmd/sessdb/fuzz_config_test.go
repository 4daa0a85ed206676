package main

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"sessdb/internal/jsstr"
	"sessdb/store"
)

// The fuzz targets of this file give the CLI's other readers of what the
// operator and the runner hand it (a flag's value, the key's flags, the
// sessions root, the environment's names) any text, and check what
// docs/cli.md promises of each: a value accepted means what it says, and
// a refusal is one short line that names what it refuses.

// FuzzFlagValue gives every flag of every command any value, as
// --name=value: the usage error, if any, is one short line however long
// the value (a 100 KB variable pasted into a flag), and a flag given twice
// is refused.
func FuzzFlagValue(f *testing.F) {
	for _, v := range []string{"", "x", "30", "-1", "1e3", "true", "maybe", "0.5", "2026-03-10T09:14:55Z", "10s", "http://a:1",
		strings.Repeat("\u202e", 300), strings.Repeat("9", 5000), "\xff\xfe", "a\nb"} {
		f.Add(uint8(0), uint8(0), v)
		f.Add(uint8(1), uint8(3), v)
		f.Add(uint8(7), uint8(1), v)
	}
	f.Fuzz(func(t *testing.T, ci, fi uint8, value string) {
		c := commands[int(ci)%len(commands)]
		fs := c.newFlags()
		c.bind(fs)
		bindLog(fs)
		twice := once(fs)
		var names []string
		fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
		if len(names) == 0 {
			return
		}
		name := names[int(fi)%len(names)]
		arg := "--" + name + "=" + value
		_, err := parseInterspersed(fs, []string{arg, arg})
		if err == nil || *twice == "" && !strings.Contains(err.Error(), "invalid") && !strings.Contains(err.Error(), "given more than once") {
			t.Fatalf("sessdb %s %s %s: %v, twice %q", c.name, arg, arg, err, *twice)
		}
		fs = c.newFlags()
		c.bind(fs)
		bindLog(fs)
		once(fs)
		if _, err := parseInterspersed(fs, []string{arg}); err != nil {
			if msg := briefFlagError(err.Error()); len(msg) > maxMessage || !utf8.ValidString(msg) {
				t.Fatalf("sessdb %s --%s=(%d bytes): a %d-byte message: %.200q", c.name, name, len(value), len(msg), msg)
			}
		}
	})
}

// FuzzKeyFromFlags checks --key and --kind/--repo/--ref: a key taken as
// given is a valid key, a derived one is the legacy derivation of all
// three (a local key without a repository), and a refusal is one short
// line, however long the values.
func FuzzKeyFromFlags(f *testing.F) {
	key := store.Key("github", "o/r", "refs/pull/1")
	f.Add(key, "", "", "")
	f.Add("", "github", "o/r", "refs/pull/1")
	f.Add("", "local", "", "trigger-7")
	f.Add("", "local", "o/r", "t")
	f.Add(strings.ToUpper(key), "", "", "")
	f.Add(key, "github", "", "")
	f.Add("", "", "o/r", strings.Repeat("\x1b[31m", 100))
	f.Fuzz(func(t *testing.T, key, kind, repo, ref string) {
		got, err := keyFromFlags(key, kind, repo, ref)
		if err != nil {
			if got != "" || len(err.Error()) > maxMessage {
				t.Fatalf("keyFromFlags: %q with a %d-byte error", got, len(err.Error()))
			}
			if key != "" && kind+repo+ref == "" && !errors.Is(err, store.ErrInvalidKey) {
				t.Fatalf("--key %q refused, but not as an invalid key: %v", key, err)
			}
			return
		}
		if !store.ValidKey(got) {
			t.Fatalf("keyFromFlags(%q, %q, %q, %q) = %q, not a key", key, kind, repo, ref, got)
		}
		switch {
		case key != "":
			if got != key || kind+repo+ref != "" {
				t.Fatalf("--key %q with %q %q %q gave %q", key, kind, repo, ref, got)
			}
		case kind == "" || ref == "" || (kind == "local") != (repo == "") || got != store.Key(kind, repo, ref):
			t.Fatalf("--kind %q --repo %q --ref %q gave %q", kind, repo, ref, got)
		}
	})
}

// FuzzSessionsDir checks where the sessions root comes from: the DIR
// argument, else --sessions-dir, else PI_SESSIONS_DIR, taken only when it
// is UTF-8 text, shorter than a path the system opens, with no white
// space around it and nothing only a shell expands (shellOnly); a refusal
// names its source in one short line.
func FuzzSessionsDir(f *testing.F) {
	f.Add("", "", "/var/lib/pi/sessions")
	f.Add("/srv/s", "/x", "/y")
	f.Add("", " /x", "")
	f.Add("", "", "/var/lib/pi/sessions\n")
	f.Add("", "\xff", "")
	f.Add("", "", "")
	f.Add(strings.Repeat("a", unix.PathMax), "", "")
	f.Fuzz(func(t *testing.T, arg, flagValue, env string) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cfg := bindRoot(fs)
		if err := fs.Set("sessions-dir", flagValue); err != nil {
			t.Fatal(err)
		}
		getenv := func(name string) string {
			if name == "PI_SESSIONS_DIR" {
				return env
			}
			return ""
		}
		dir, err := cfg.dir(getenv, arg)
		want, source := arg, "the DIR argument"
		switch {
		case arg != "":
		case flagValue != "":
			want, source = flagValue, "--sessions-dir"
		default:
			want, source = env, "PI_SESSIONS_DIR"
		}
		if want == "" {
			if !errors.Is(err, errSessionsDirUnset) {
				t.Fatalf("no root given: %q, %v", dir, err)
			}
			return
		}
		if dir != want {
			t.Fatalf("dir(%q, --sessions-dir %q, env %q) = %q; want %q from %s", arg, flagValue, env, dir, want, source)
		}
		plain := utf8.ValidString(want) && len(want) < unix.PathMax && strings.TrimFunc(want, jsstr.IsSpace) == want && !shellOnly(want)
		if (err == nil) != plain {
			t.Fatalf("root %.100q from %s: %v", want, source, err)
		}
		if err != nil && (len(err.Error()) > maxNameMessage || !strings.HasPrefix(err.Error(), source+": ")) {
			t.Fatalf("root from %s refused in a %d-byte message not naming it: %.200q", source, len(err.Error()), err)
		}
	})
}

// shellOnly is this test's own statement of the names docs/cli.md says
// only a shell expands, and sessdb refuses as a root: one beginning with
// "~", one wholly in quotes, one holding two backticks, or "$" before an
// ASCII letter, "_", "{" or "(".
func shellOnly(p string) bool {
	if strings.HasPrefix(p, "~") || strings.Count(p, "`") >= 2 {
		return true
	}
	if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') && p[len(p)-1] == p[0] {
		return true
	}
	for i := 0; i+1 < len(p); i++ {
		if c := p[i+1]; p[i] == '$' && (c == '_' || c == '{' || c == '(' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return true
		}
	}
	return false
}

// FuzzUnknownEnv checks the warning for a variable that looks like one of
// sessdb's but is not: one for each such name and none for another, each a
// short line that suggests a variable sessdb reads, whatever the name holds.
func FuzzUnknownEnv(f *testing.F) {
	for _, s := range []string{"PI_SESSIONS_TTL_DAY=3", "PI_SESSIONS_DIR=/x", "PI_SESSION_REQUIRE=1", "HOME=/root", "PI_SESSIONS_ETCD_PASSWROD=secret",
		"PI_SESSIONS" + strings.Repeat("_X", 2000) + "=1", "PI_SESSIONS\x1b[2J=1", "=", "PI_SESSION"} {
		f.Add(s)
	}
	known := knownEnv()
	f.Fuzz(func(t *testing.T, kv string) {
		name, _, _ := strings.Cut(kv, "=")
		ws := unknownEnv([]string{kv})
		foreign := (strings.HasPrefix(name, envPrefix) || misspelt(name, known) != "") && !slices.Contains(known, name) && !workersEnv[name]
		if foreign != (len(ws) == 1) || len(ws) > 1 {
			t.Fatalf("%q: %d warnings", kv, len(ws))
		}
		if len(ws) == 0 {
			return
		}
		if len(ws[0]) > maxMessage || strings.Contains(ws[0], kv[len(name):]) && len(kv)-len(name) > 8 {
			t.Fatalf("%.100q: a %d-byte warning %.200q", kv, len(ws[0]), ws[0])
		}
		// The last "did you mean": the name itself may hold the words.
		i := strings.LastIndex(ws[0], "did you mean ")
		if i < 0 || !slices.Contains(known, strings.TrimSuffix(ws[0][i+len("did you mean "):], "?")) {
			t.Fatalf("%q: %q suggests no variable sessdb reads", kv, ws[0])
		}
	})
}
