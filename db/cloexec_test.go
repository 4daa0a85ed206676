package db

import (
	"os/exec"
	"strings"
	"testing"
)

// No descriptor of a key dir's files that a DB holds is inherited by a
// program the process starts (a worker runs pi and hooks while it holds
// keys): an inherited meta.db descriptor keeps the file, and its open file
// description's flock, for as long as the child lives.
func TestNoMetaDBDescriptorIsInheritedByAChild(t *testing.T) {
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	inherited := func(t *testing.T, kd keyDir) {
		t.Helper()
		out, err := exec.Command(ls, "-l", "/proc/self/fd/").CombinedOutput()
		if err != nil {
			t.Fatalf("ls: %v\n%s", err, out)
		}
		if strings.Contains(string(out), kd.path) {
			t.Errorf("a child holds a descriptor in the key dir:\n%s", out)
		}
	}
	for _, c := range []struct {
		name              string
		write, link, noTF bool
	}{
		{"reader", false, false, false},
		{"new writer", true, false, false},
		{"writer of a hard-linked meta.db", true, true, false},
		{"writer of a hard-linked meta.db without O_TMPFILE", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			testHookNoTmpfile = c.noTF
			defer func() { testHookNoTmpfile = false }()
			kd := newKeyDir(t)
			if !c.write || c.link {
				kd = makeDB(t, 1)
			}
			if c.link {
				hardLink(t, kd)
			}
			d := mustOpen(t, kd, c.write)
			if _, _, copied := d.CopiedFrom(); copied != c.link {
				t.Fatalf("copied %v, want %v", copied, c.link)
			}
			inherited(t, kd)
		})
	}
}
