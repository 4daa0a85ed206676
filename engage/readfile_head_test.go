package engage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pi migrates a version 1 file by rewriting it whole: the header gains
// "version":3 as its last key and every entry an id and a parentId. Its
// first line is then unchanged up to its end, so a header longer than 4
// KiB (a v1 header holds cwd and branchedFrom, each a path) left the first
// 4 KiB the same and the file longer: a read across that rewrite mixed the
// two files and replayed with no error. The docs promise ErrChanged when
// the first line changed; an append after such a header is still no change.
func TestReadFileLongHeaderRewrittenIsChanged(t *testing.T) {
	long := "/" + strings.Repeat("d", 5000)
	header := `{"type":"session","id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"` + long + `","branchedFrom":"` + long + `.jsonl"`
	msg := func(tail string) string {
		return `{"type":"message","timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hello"}` + tail + "}\n"
	}
	v1 := header + "}\n" + msg("") + msg("")
	short := `{"type":"session","id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"`
	migrated := header + `,"version":3}` + "\n" + msg(`,"id":"aaaaaaaa","parentId":null`) + msg(`,"id":"bbbbbbbb","parentId":"aaaaaaaa"`)
	file := filepath.Join(t.TempDir(), "t.jsonl")
	defer func() { readFileHook = nil }()
	for _, c := range []struct {
		name    string
		old     string
		change  func() error
		changed bool
	}{
		{"migrated", v1, func() error { return os.WriteFile(file, []byte(migrated), 0o600) }, true},
		{"blank first line, migrated", "\n" + short + "}\n" + msg(""), func() error {
			return os.WriteFile(file, []byte("\n"+short+`,"version":3}`+"\n"+msg(`,"id":"aaaaaaaa","parentId":null`)+msg(`,"id":"bbbbbbbb","parentId":"aaaaaaaa"`)), 0o600)
		}, true},
		{"appended to", v1, func() error {
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString(msg(""))
				f.Close()
			}
			return err
		}, false},
	} {
		if err := os.WriteFile(file, []byte(c.old), 0o600); err != nil {
			t.Fatal(err)
		}
		readFileHook = func() {
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := ReadFile(file)
		if got := errors.Is(err, ErrChanged); got != c.changed {
			t.Errorf("%s: %v; want ErrChanged %v", c.name, err, c.changed)
		}
		if !c.changed && (err != nil || tr.Stats.Entries != 2) {
			t.Errorf("%s: %v, %+v", c.name, err, tr)
		}
	}
}
