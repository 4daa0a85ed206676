package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// sessionsRootFile, which keeps a fleet from marking a sessions root as
// its transcripts dir, finds either of a sessions root's files (meta.db
// alone, as a key whose transcript was lost has; current.jsonl alone, as
// a legacy root's keys have) in any of the first 64 key
// dirs by name, whatever order they were listed in, passing by a key dir
// it cannot open (here a file at a key's name) and an empty one; it
// looks no further, and keeps no descriptor open.
func TestSessionsRootFileFindsEitherFileInTheFirstKeyDirs(t *testing.T) {
	key := func(i int) string { return fmt.Sprintf("%032x", i) }
	for _, c := range []struct {
		name  string
		n     int            // key dirs made, key(0) to key(n-1)
		files map[int]string // a sessions root's file made in key(i)
		want  string
	}{
		{"meta.db alone, past a file and an empty dir", 3, map[int]string{2: db.FileName}, key(2) + "/" + db.FileName},
		{"current.jsonl alone", 1, map[int]string{0: store.TranscriptName}, key(0) + "/" + store.TranscriptName},
		{"the first by name", 3, map[int]string{1: db.FileName, 2: db.FileName}, key(1) + "/" + db.FileName},
		// The first 64, as the claim's refusal is documented.
		{"in the last key dir looked in", 65, map[int]string{63: db.FileName}, key(63) + "/" + db.FileName},
		{"past the last key dir looked in", 65, map[int]string{64: db.FileName}, ""},
		{"none", 3, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			var keys []string
			for i := range c.n {
				keys = append(keys, key(i))
				if i == 0 && c.files[0] == "" {
					// A file at the first key's name: no dir to open.
					if err := os.WriteFile(filepath.Join(p, key(i)), nil, 0o600); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.Mkdir(filepath.Join(p, key(i)), 0o700); err != nil {
					t.Fatal(err)
				}
				if f := c.files[i]; f != "" {
					if err := os.WriteFile(filepath.Join(p, key(i), f), nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			slices.Reverse(keys)
			dir, err := fsat.OpenDir(p)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			fds := openFDs(t)
			if got := sessionsRootFile(dir, keys); got != c.want {
				t.Errorf("sessionsRootFile: %q; want %q", got, c.want)
			}
			if n := openFDs(t); n != fds {
				t.Errorf("%d descriptors open after it, %d before", n, fds)
			}
		})
	}
}

// openFDs counts the process's open descriptors (Linux: /proc/self/fd).
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("descriptors not countable here: %v", err)
	}
	return len(es)
}
