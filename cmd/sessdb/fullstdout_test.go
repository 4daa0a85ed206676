package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/store"
)

// fullAfter is a stdout on a disk that fills after limit bytes: it takes
// what fits of the write that crosses it, then fails every write ENOSPC.
type fullAfter struct {
	buf   bytes.Buffer
	limit int
}

func (f *fullAfter) Write(p []byte) (int, error) {
	room := f.limit - f.buf.Len()
	if room >= len(p) {
		return f.buf.Write(p)
	}
	f.buf.Write(p[:max(room, 0)])
	return max(room, 0), syscall.ENOSPC
}

// A stdout that fills under a command's lines (dump --json > file on a
// disk with little room) keeps what it took, cut mid-line, with no
// summary, and the command exits 1. docs/json.md said a command that
// fails prints nothing on stdout, no partial stream, and that the one
// partial stream is migrate's, so a worker that parsed the file without
// its exit status read half a dump as a dump. Both pages now say what a
// full stdout keeps.
func TestAStdoutThatFillsKeepsWhatItTookCut(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	for i := range 40 {
		dir := filepath.Join(root, store.Key("github", "acme/full", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	out := &fullAfter{limit: 10000}
	var errs bytes.Buffer
	code := run([]string{"dump", "--json", "--log-format", "json", root}, out, &errs)
	got := out.buf.String()
	if code != exitFault || !strings.Contains(errs.String(), "no space left on device") {
		t.Fatalf("dump on a stdout that fills: exit %d, stderr %s; want exit 1 naming the write", code, errs.String())
	}
	if len(got) != out.limit || strings.HasSuffix(got, "\n") || strings.Contains(got, `{"summary":`) {
		t.Fatalf("dump on a stdout that fills at %d bytes left %d bytes, ending %q; want them all, cut mid-line, no summary", out.limit, len(got), got[max(0, len(got)-40):])
	}
	docSays(t, "json.md", "but for a stdout that itself fails under the write (a full disk, a file at its size limit): what it took stays there, cut where the write failed, mid-line included, with no summary")
	docSays(t, "cli.md", "A full disk is a fault, exit 1, for every command, and what stdout took before it filled stays there, cut where the write failed, mid-line included, with no summary line")
}
