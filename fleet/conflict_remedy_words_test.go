package fleet

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/fleet/etcdmeta"
)

// The command lines a migration's conflict summary gives the operator
// (ConflictRemedy) run as written in a POSIX shell, whatever the root and
// the prefix are: the root, one word however it is spelled (a space, a
// quote, a "$"), and the etcd keys given to etcdctl as keys, not options,
// under a prefix that begins with "-" (Config takes one). The CLI's test
// of the conflict summary has a root and a prefix of safe characters
// alone, so that a remedy that quoted neither passed it; under this root,
// the quarantine would move nothing aside ("no such key dir" of a root cut
// at its space), and under this prefix etcdctl would refuse the del
// ("unknown shorthand flag"), removing nothing. No etcd is needed: the
// words are the Backend's prefix's.
func TestAConflictsRemedyRunsAsWrittenWhateverTheRootAndPrefix(t *testing.T) {
	prefix := "-t" + randHex(8)
	b, err := Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: prefix}, TranscriptsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	root := filepath.Join(t.TempDir(), `pi's sessions $HOME`)
	remedy := b.ConflictRemedy(root)

	const lead = `env -i PATH="$PATH" sessdb `
	i := strings.Index(remedy, lead)
	j := strings.Index(remedy, "), or the key dir's")
	if i < 0 || j < i {
		t.Fatalf("no quarantine command in %q", remedy)
	}
	out, err := exec.Command("sh", "-c", `printf '%s\n' `+remedy[i+len(lead):j]).Output()
	if err != nil {
		t.Fatalf("sh ran %q: %v", remedy[i:j], err)
	}
	if got, want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), []string{"check", "--repair", "--quarantine", "KEY", root}; !slices.Equal(got, want) {
		t.Errorf("the quarantine command %q gives sessdb %q; want %q", remedy[i:j], got, want)
	}

	want := []string{"del", prefix + "/history/KEY/", "del", prefix + "/record/KEY"}
	if got := etcdctlArgs(t, remedy[:strings.LastIndex(remedy, "), then run again")]); !slices.Equal(got, want) {
		t.Errorf("the remedy %q gives etcdctl %q; want %q (the history first)", remedy, got, want)
	}
}
