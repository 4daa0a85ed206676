package migrate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/store"
)

// TestMigrationFigure measures a migration of SESSDB_MIGRATE_FIGURE
// generated legacy key dirs (10000 for the closing note) in a temp dir:
// keys per second both ways, and the disk used before and after (the sum
// of st_blocks*512 over the tree, as du counts). It is skipped unless the
// variable is set; SESSDB_MIGRATE_FIGURE_WORKERS sets Workers (default 1),
// SESSDB_MIGRATE_FIGURE_BYTES the transcript size (default 16384).
//
//	SESSDB_MIGRATE_FIGURE=10000 go test -run TestMigrationFigure -v ./migrate/
func TestMigrationFigure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SESSDB_MIGRATE_FIGURE"))
	if n <= 0 {
		t.Skip("set SESSDB_MIGRATE_FIGURE=10000 to measure")
	}
	workers, _ := strconv.Atoi(os.Getenv("SESSDB_MIGRATE_FIGURE_WORKERS"))
	size, _ := strconv.Atoi(os.Getenv("SESSDB_MIGRATE_FIGURE_BYTES"))
	if size <= 0 {
		size = 16384
	}
	root := filepath.Join(t.TempDir(), "sessions")
	must(t, os.Mkdir(root, 0o700))
	body := transcriptBytes(testNow.Add(-24 * time.Hour))
	line := `{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-11-01T11:00:00.000Z","message":{"role":"assistant","content":"` + strings.Repeat("x", 200) + `"}}` + "\n"
	for len(body) < size {
		body += line
	}
	began := time.Now()
	for i := range n {
		// Plain writes, then one syncfs: generating is not what is measured.
		layKeyDir(t, filepath.Join(root, store.Key("figure", "acme/widget", strconv.Itoa(i))), map[string]ent{
			"current.jsonl": {kind: 'f', data: body, mtime: testNow.Add(-time.Duration(i) * time.Minute)},
			"pi-version":    file(testPi),
			"venue":         file("local"),
			"resume-chain":  file(strconv.Itoa(i % 5)),
			"context":       file(fmt.Sprintf("%d 200000 anthropic/claude-x", 1000+i)),
		})
	}
	syncfs(t, root)
	t.Logf("generated %d legacy key dirs with %d-byte transcripts in %v", n, len(body), time.Since(began).Round(time.Millisecond))

	before := du(t, root)
	opts := Options{Workers: workers}
	began = time.Now()
	sum, err := ToDB(root, opts, func(Report) error { return nil })
	must(t, err)
	toDB := time.Since(began)
	if sum.Migrated != n {
		t.Fatalf("migrated %d of %d: %+v", sum.Migrated, n, sum)
	}
	after := du(t, root)

	began = time.Now()
	sum, err = ToLegacy(root, opts, func(Report) error { return nil })
	must(t, err)
	back := time.Since(began)
	if sum.Migrated != n {
		t.Fatalf("rolled back %d of %d: %+v", sum.Migrated, n, sum)
	}
	t.Logf("workers %d: to-db %d keys in %v = %.0f keys/s; to-legacy %v = %.0f keys/s",
		max(workers, 1), n, toDB.Round(time.Millisecond), float64(n)/toDB.Seconds(), back.Round(time.Millisecond), float64(n)/back.Seconds())
	t.Logf("disk used (st_blocks*512): legacy %s (%s a key), meta.db layout %s (%s a key), rolled back %s",
		mib(before), kib(before/int64(n)), mib(after), kib(after/int64(n)), mib(du(t, root)))
}

// du sums st_blocks*512 over every entry under root, root included.
func du(t *testing.T, root string) int64 {
	var total int64
	must(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		total += st.Blocks * 512
		return nil
	}))
	return total
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
