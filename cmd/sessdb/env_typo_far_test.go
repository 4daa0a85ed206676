package main

import (
	"strings"
	"testing"
)

// A name outside the prefix is a typo of a variable only within typoEdits
// (2) edits of it: PI_SESSOINS_DIR (two letters swapped) is named as a
// typo of PI_SESSIONS_DIR, PI_SESSOINS_DIX (one edit more) is not, though
// its bytes are those of PI_SESSIONS_DIR but one.
func TestANameThreeEditsFromAVariableIsNoTypo(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"PI_SESSOINS_DIR", "PI_SESSIONS_DIR"},
		{"PI_SESSOINS_DIX", ""},
	} {
		got := unknownEnv([]string{c.name + "=/x"})
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: warned %q; want nothing, 3 edits from every variable", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], "did you mean "+c.want+"?")):
			t.Errorf("%s: warned %q; want it named a typo of %s", c.name, got, c.want)
		}
	}
}
