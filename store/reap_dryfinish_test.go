package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
)

// A dry run says of a reap-owned dir to finish what the reap does with
// it: the reap removes it only when everything in it is the store's, and
// fails it, nothing removed, where something is not (a subdirectory, a
// FIFO). The dry run listed such a dir as one it would finish, and exited
// 0, where the reap then failed it.
func TestReapDryRunSaysWhatAFinishWouldDo(t *testing.T) {
	for _, c := range []struct {
		name    string
		foreign func(t *testing.T, dir string) // nil: only the store's
	}{
		{"only the store's", nil},
		{"a subdirectory", func(t *testing.T, dir string) { mustMkdir(t, filepath.Join(dir, "sub")) }},
		{"a FIFO", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := Key("a", "b", "dry finish")
			aside := filepath.Join(root, ReapedPrefix+key+"-00000000000000ee")
			if err := os.MkdirAll(aside, 0o700); err != nil { // no meta.db: no promotion landed in it
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(aside, TranscriptName), []byte("x\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.foreign != nil {
				c.foreign(t, aside)
			}
			name := filepath.Base(aside)
			dry, res := dryRunThenReap(t, s, root)
			if c.foreign == nil {
				if !slices.Equal(res.Finished, []string{name}) || len(res.Failed) != 0 {
					t.Fatalf("reap = %+v; want %s finished", res, name)
				}
			} else if len(res.Finished) != 0 || !slices.Equal(res.Failed, []string{name}) || !strings.Contains(res.Skipped[name], ErrForeignEntry.Error()) {
				t.Fatalf("reap = %+v; want %s failed, not the store's", res, name)
			}
			if !slices.Equal(dry.Finished, res.Finished) || !slices.Equal(dry.Failed, res.Failed) || dry.Skipped[name] != res.Skipped[name] {
				t.Fatalf("dry run: finished %v, failed %v %q; the reap: finished %v, failed %v %q",
					dry.Finished, dry.Failed, dry.Skipped[name], res.Finished, res.Failed, res.Skipped[name])
			}
		})
	}
}
