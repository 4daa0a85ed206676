package shellquote

import (
	"os"
	"os/exec"
	"testing"
)

// TestWordIsWhatTheShellReads hands each word to /bin/sh and wants back
// one word, the string it stands for, byte for byte, with nothing run.
func TestWordIsWhatTheShellReads(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	for _, s := range []string{"", "/var/lib/pi", "a b", "it's", "$1", "$(touch ran)", "`touch ran`", "x\ny", "*", "~root", "a;b", `back\slash`, "'", "''"} {
		// The count of words as well as the word: "printf %s" of no
		// word at all prints what it prints of "", so an empty string
		// left bare (a lost argument) passed.
		out, err := exec.Command("/bin/sh", "-c", "set -- "+Word(s)+`; printf '%d:%s' "$#" "$1"`).Output()
		if err != nil || string(out) != "1:"+s {
			t.Errorf("Word(%q) = %s: the shell read %q, want one word %q (%v)", s, Word(s), out, s, err)
		}
	}
	if Word("/var/lib/pi-sessions_1") != "/var/lib/pi-sessions_1" {
		t.Errorf("a plain path is quoted: %s", Word("/var/lib/pi-sessions_1"))
	}
}
