package shellquote

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shellWords are strings a shell other than POSIX sh, or sh itself in a
// directory whose names a pattern matches, reads otherwise as a bare
// word: a comment, a pattern, a brace expansion, zsh's "=cmd" (EQUALS),
// bash's interactive "!" (history expansion).
var shellWords = []string{"#x", "?", "[a]", "a*", "x{a,b}", "=ls", "=x", "a!b", "!ls", "^a", "a^b", "", "/var/lib/pi", "a b", "$1", "it's", "~root"}

// Each word is read back as itself, one word, by every shell here that an
// operator may paste a printed line into: sh, bash and zsh (its defaults,
// no rc file) given the line with -c, and bash reading it interactively
// (history expansion on), each in a directory holding files named "a",
// "b" and "c", so that a pattern left bare matches.
func TestWordIsWhatEveryShellReads(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "xa", "ls"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shells := [][]string{{"sh", "-c"}, {"bash", "--norc", "-c"}, {"zsh", "-f", "-c"}, {"bash", "--norc", "-i"}}
	ran := 0
	for _, sh := range shells {
		if _, err := exec.LookPath(sh[0]); err != nil {
			t.Logf("no %s here", sh[0])
			continue
		}
		ran++
		for _, s := range shellWords {
			line := "set -- " + Word(s) + `; printf '<%d:%s>' "$#" "$1"`
			args := sh[1:]
			var stdin string
			if sh[len(sh)-1] == "-i" {
				stdin = line + "\nexit\n" // read as typed, not as -c's string
			} else {
				args = append(args[:len(args):len(args)], line)
			}
			cmd := exec.Command(sh[0], args...)
			cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
			cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "HISTFILE=" + filepath.Join(dir, ".history")}
			out, _ := cmd.Output()
			if want := "<1:" + s + ">"; !strings.Contains(string(out), want) {
				t.Errorf("%s: Word(%q) = %s: the shell read %q, want one word %q", strings.Join(sh, " "), s, Word(s), out, s)
			}
		}
	}
	if ran == 0 {
		t.Fatal("no shell here to read the words")
	}
}
