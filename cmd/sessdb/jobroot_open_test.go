package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/shellquote"
	"sessdb/store"
)

// A sessions root anyone may write to without the sticky bit is refused
// by every walk (dump, stats, check, reap, migrate), but taken by resolve and
// promote: refusing it there would stop a deployment that works. Each
// says so on stderr, one warning line naming the flag or variable, the
// root and the mend (chmod +t, on the directory the root leads to), and
// its verdict and exit status are as they were; a root with the sticky
// bit, or writable by its group alone, says nothing. The mode it gives is
// the directory's whole, a setgid bit too. Before, both were silent, and
// the keys made there were never reaped.
func TestAJobWarnsOfASessionsRootNoWalkTakes(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	os.Mkdir(root, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(root, link)
	job := func(t *testing.T, dir string) (resolveErrs, promoteErrs string) {
		t.Helper()
		j := filepath.Join(t.TempDir(), "job")
		code, out, errs := runCLI(t, resolveArgs(dir, j)...)
		if code != exitOK || !strings.Contains(out, `"reason":`) {
			t.Fatalf("resolve: exit %d, %s %s", code, out, errs)
		}
		staged := filepath.Join(j, "session", "current.jsonl")
		b, _ := os.ReadFile(staged)
		if len(b) == 0 {
			b = []byte(header)
		}
		os.WriteFile(staged, append(b, `{"type":"message","id":"m"}`+"\n"...), 0o600)
		t.Setenv("PI_SESSIONS_DIR", dir)
		code, out, perrs := runCLI(t, "promote", "--job-dir", j, "--pi-version", "0.58.3")
		t.Setenv("PI_SESSIONS_DIR", "")
		if code != exitOK || !strings.Contains(out, `"promoted":true`) {
			t.Fatalf("promote: exit %d, %s %s", code, out, perrs)
		}
		return errs, perrs
	}
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{
		{0o777, true}, {0o703, true}, {0o777 | os.ModeSetgid, true}, {0o777 | os.ModeSticky, false}, {0o770, false}, {0o700, false},
	} {
		if err := os.Chmod(root, c.mode); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{root, link} {
			rerrs, perrs := job(t, dir)
			for cmd, errs := range map[string]string{"resolve": rerrs, "promote": perrs} {
				name := "--sessions-dir"
				if cmd == "promote" {
					name = "PI_SESSIONS_DIR"
				}
				if !c.warn {
					if errs != "" {
						t.Errorf("mode %v, %s via %s: stderr %q; want nothing", c.mode, cmd, dir, errs)
					}
					continue
				}
				// The mode as chmod takes it: the setgid bit is 02000.
				mode := uint32(c.mode.Perm())
				if c.mode&os.ModeSetgid != 0 {
					mode |= 0o2000
				}
				want := fmt.Sprintf(`%s: the sessions root "%s" is writable by anyone (mode %#o, no sticky bit)`, name, dir, mode)
				if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "chmod +t "+root+" (or chmod o-w)") || !strings.Contains(errs, "dump, stats, check, reap and migrate refuse") {
					t.Errorf("mode %v, %s via %s: stderr %q; want one warning: %s…, chmod +t %q", c.mode, cmd, dir, errs, want, root)
				}
			}
		}
		for _, walk := range []string{"dump", "stats", "check", "reap", "migrate"} {
			code, _, errs := runCLI(t, walk, root)
			if wantCode := map[bool]int{true: exitUsage, false: exitOK}[c.warn]; code != wantCode {
				t.Errorf("mode %v: %s exit %d (%s); want %d, as the warning says", c.mode, walk, code, errs, wantCode)
			}
		}
	}
}

// The warning's mend is a command line an operator pastes: the root in it
// is one shell word, so that the directory chmod +t is given is the root's,
// whatever its name holds (a space, a quote, a "$1" or "$$", which a root
// may have; through a link, a "`...`" or "$(...)" too, which only the
// name given is refused for), and nothing in the name runs. Go's quoting
// ("...") left "$1", "$$", "`...`" and "$(...)" to the shell.
func TestARootNoWalkTakesIsMendedByTheWarningsCommandAsPasted(t *testing.T) {
	for _, c := range []struct{ name, real string }{
		{"a b'c\"$1 $$ d", ""},
		{"link", "x`touch ran`$(touch ran) $$"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			base := t.TempDir()
			root := filepath.Join(base, c.name)
			real := root
			if c.real != "" {
				real = filepath.Join(base, c.real)
				if err := os.Symlink(real, root); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chmod(real, 0o777)
			code, out, errs := runCLI(t, resolveArgs(root, filepath.Join(t.TempDir(), "job"))...)
			if code != exitOK || !strings.Contains(out, `"reason":`) {
				t.Fatalf("resolve: exit %d, %s %s", code, out, errs)
			}
			_, mend, ok := strings.Cut(errs, "; chmod +t ")
			mend, _, ok2 := strings.Cut(mend, " (or chmod o-w) mends it in place")
			if !ok || !ok2 {
				t.Fatalf("resolve's stderr %q: no chmod +t ROOT (or chmod o-w) mends it in place", errs)
			}
			sh := exec.Command("/bin/sh", "-c", "chmod +t "+mend)
			sh.Dir = base // where a "touch ran" in the name would run
			if b, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("chmod +t %s, as pasted into sh: %v %s", mend, err, b)
			}
			if _, err := os.Lstat(filepath.Join(base, "ran")); err == nil {
				t.Errorf("chmod +t %s, as pasted into sh, ran the command in the root's name", mend)
			}
			fi, err := os.Stat(real)
			if err != nil || fi.Mode()&os.ModeSticky == 0 {
				t.Fatalf("chmod +t %s, as pasted into sh: the root's dir %q is %v (%v); want the sticky bit", mend, real, fi.Mode(), err)
			}
			if code, _, errs := runCLI(t, "reap", root); code != exitOK {
				t.Errorf("reap after the mend: exit %d (%s); want 0", code, errs)
			}
		})
	}
}

// A fleet's transcripts dir anyone may write to without the sticky bit
// is refused by every fleet walk (dump, stats, check, reap, migrate), as a
// sessions root is, and taken by the fleet's resolve and promote, which
// now warn of it as they warn of such a sessions root: one line on
// stderr naming the variable or flag, the dir and the mend (chmod +t, on
// the directory it leads to), the verdict and exit status as they were.
// One with the sticky bit, or writable by its group alone, says nothing.
// Before, both were silent, and reap refused the dir their keys were in.
func TestAFleetJobWarnsOfATranscriptsDirNoWalkTakes(t *testing.T) {
	f := startFleet(t)
	link := filepath.Join(filepath.Dir(f.dir), "link")
	if err := os.Symlink(f.dir, link); err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/open-transcripts")
	n := 0
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{
		{0o777, true}, {0o703, true}, {0o777 | os.ModeSetgid, true}, {0o777 | os.ModeSticky, false}, {0o770, false}, {0o700, false},
	} {
		if err := os.Chmod(f.dir, c.mode); err != nil {
			t.Fatal(err)
		}
		for _, via := range []struct{ dir, name string }{
			{f.dir, "PI_SESSIONS_TRANSCRIPTS_DIR"}, {link, "PI_SESSIONS_TRANSCRIPTS_DIR"}, {link, "--transcripts-dir"},
		} {
			n++
			var extra []string
			if via.name == "--transcripts-dir" {
				t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "")
				extra = []string{"--transcripts-dir", via.dir}
			} else {
				t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", via.dir)
			}
			job := filepath.Join(f.jobs, fmt.Sprintf("job-%d", n))
			code, out, rerrs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3"}, extra...)...)
			if code != exitOK || !strings.Contains(out, `"reason":`) {
				t.Fatalf("mode %v via %s: resolve exit %d\n%s%s", c.mode, via.name, code, out, rerrs)
			}
			appendAnswered(t, job, fmt.Sprint(n))
			code, out, perrs := runCLI(t, append([]string{"promote", "--job-dir", job, "--pi-version", "0.58.3"}, extra...)...)
			if code != exitOK || !strings.Contains(out, `"promoted":true`) {
				t.Fatalf("mode %v via %s: promote exit %d\n%s%s", c.mode, via.name, code, out, perrs)
			}
			for cmd, errs := range map[string]string{"resolve": rerrs, "promote": perrs} {
				if !c.warn {
					if errs != "" {
						t.Errorf("mode %v, %s via %s %s: stderr %q; want nothing", c.mode, cmd, via.name, via.dir, errs)
					}
					continue
				}
				want := via.name + `: the transcripts dir "` + via.dir + `" is writable by anyone`
				if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "chmod +t "+shellquote.Word(f.dir)+" (or chmod o-w)") || !strings.Contains(errs, "dump, stats, check, reap and migrate refuse") {
					t.Errorf("mode %v, %s via %s %s: stderr %q; want one warning: %s…, chmod +t %q", c.mode, cmd, via.name, via.dir, errs, want, f.dir)
				}
			}
		}
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
		code, _, errs := runCLI(t, "reap")
		if wantCode := map[bool]int{true: exitUsage, false: exitOK}[c.warn]; code != wantCode {
			t.Errorf("mode %v: the fleet's reap exit %d (%s); want %d, as the warning says", c.mode, code, errs, wantCode)
		}
	}
}

// The warning is of a directory: a sessions root that is a file anyone
// may write to is no root a walk refuses for its mode, and resolve says
// what it finds there, without the warning and its chmod +t, which would
// mend nothing.
func TestAJobWarnsOfNoSessionsRootThatIsAFile(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	if err := os.WriteFile(root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, resolveArgs(root, filepath.Join(t.TempDir(), "job"))...)
	if strings.Contains(errs, "writable by anyone") || strings.Contains(errs, "chmod +t") {
		t.Errorf("resolve with a sessions root that is a file of mode 0777: exit %d, %s; stderr %q; want no warning of a root anyone may write to", code, out, errs)
	}
}
