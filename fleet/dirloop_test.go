package fleet

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/testfs"
)

// A transcripts dir whose path runs through a loop of links is the
// configuration's mistake (ELOOP, exit 2), as a stat of it always said:
// not a failing mount, on which every resolve would be a cold start
// store-unavailable. Where it leads is resolved first (fsat.ResolvedPath),
// and its failure is judged as a stat's; Go's own count of links, past
// 255, carried no errno, and the loop was taken for the storage failing.
func TestATranscriptsDirThroughALoopOfLinksIsNoTranscriptsDir(t *testing.T) {
	a := testfs.LinkLoop(t, t.TempDir())
	for _, dir := range []string{a, filepath.Join(a, "transcripts")} {
		_, err := Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}}, TranscriptsDir: dir})
		if !errors.Is(err, ErrNoTranscriptsDir) || errors.Is(err, shared.ErrDirUnavailable) || !errors.Is(err, unix.ELOOP) {
			t.Errorf("Open of %s: %v; want ErrNoTranscriptsDir, with ELOOP, not the dir unavailable", dir, err)
		}
		// The operator is told which path is wrong: the one configured,
		// where where it leads cannot be told.
		if err != nil && !strings.HasPrefix(err.Error(), "fleet open "+dir+": ") {
			t.Errorf("Open of %s: %v; want the error to name the dir", dir, err)
		}
	}
}
