package shellquote

import (
	"os"
	"os/exec"
	"testing"
)

// TestWordIsWhatTheShellReads hands each word to /bin/sh, and to bash
// and zsh where they are installed (an operator pastes into their own
// shell), and wants back one word, the string it stands for, byte for
// byte, with nothing run.
func TestWordIsWhatTheShellReads(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	shells := []string{"/bin/sh"}
	for _, sh := range []string{"bash", "zsh"} {
		if path, err := exec.LookPath(sh); err == nil {
			shells = append(shells, path)
		} else {
			t.Logf("no %s here: the words are read by the others only", sh)
		}
	}
	// "=ls" and "=sh": zsh's EQUALS (on by default) reads a word that
	// begins with "=" as the path of the command it names.
	for _, s := range []string{"", "/var/lib/pi", "a b", "it's", "$1", "$(touch ran)", "`touch ran`", "x\ny", "*", "~root", "a;b", `back\slash`, "'", "''", "=ls", "=sh", "=", "a=b", "/x/=y"} {
		for _, sh := range shells {
			// The count of words as well as the word: "printf %s" of
			// no word at all prints what it prints of "", so an empty
			// string left bare (a lost argument) passed.
			out, err := exec.Command(sh, "-c", "set -- "+Word(s)+`; printf '%d:%s' "$#" "$1"`).Output()
			if err != nil || string(out) != "1:"+s {
				t.Errorf("Word(%q) = %s: %s read %q, want one word %q (%v)", s, Word(s), sh, out, s, err)
			}
		}
	}
	// Where no zsh is installed the shells above read "=ls" as it is: the
	// rule itself, then.
	if w := Word("=ls"); w != "'=ls'" {
		t.Errorf("Word(%q) = %s: zsh would read it as the path of ls", "=ls", w)
	}
	// A "=" after the first byte is read as it is by every shell: such a
	// word stays bare.
	if Word("a=b") != "a=b" {
		t.Errorf("a word with a \"=\" inside it is quoted: %s", Word("a=b"))
	}
	if Word("/var/lib/pi-sessions_1") != "/var/lib/pi-sessions_1" {
		t.Errorf("a plain path is quoted: %s", Word("/var/lib/pi-sessions_1"))
	}
}
