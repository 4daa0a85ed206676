package shellquote

import (
	"os"
	"os/exec"
	"testing"
)

// TestWordIsWhatTheShellReads hands each word to /bin/sh and wants back
// the string it stands for, byte for byte, with nothing run.
func TestWordIsWhatTheShellReads(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	for _, s := range []string{"", "/var/lib/pi", "a b", "it's", "$1", "$(touch ran)", "`touch ran`", "x\ny", "*", "~root", "a;b", `back\slash`, "'", "''"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+Word(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Word(%q) = %s: the shell read %q (%v)", s, Word(s), out, err)
		}
	}
	if Word("/var/lib/pi-sessions_1") != "/var/lib/pi-sessions_1" {
		t.Errorf("a plain path is quoted: %s", Word("/var/lib/pi-sessions_1"))
	}
}
