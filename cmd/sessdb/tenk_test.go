package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/internal/sample"
	"sessdb/store"
)

// genSessions writes n key dirs under root, each a copy of one of the
// sample's key dirs (made by the store's own Promote: db keys that resume,
// expired and long-chained, a mixed one, a legacy one), so every layout
// and verdict is represented in the proportions of the sample. The names
// are real keys; README.txt comes along once.
func genSessions(t testing.TB, root string, n int) {
	t.Helper()
	tmpl := copySample(t)
	entries, err := os.ReadDir(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name string
		data []byte
		mode os.FileMode
	}
	var keys [][]file
	for _, e := range entries {
		if !store.ValidKey(e.Name()) {
			continue
		}
		var fs []file
		sub, _ := os.ReadDir(filepath.Join(tmpl, e.Name()))
		for _, f := range sub {
			b, err := os.ReadFile(filepath.Join(tmpl, e.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, file{f.Name(), b, 0o600})
		}
		keys = append(keys, fs)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README.txt"), []byte("not a key dir\n"), 0o600)
	mtime := sample.Time.Add(-6 * time.Hour) // as copySample's
	for i := range n {
		dir := filepath.Join(root, store.Key("gen", "acme/load", strconv.Itoa(i)))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range keys[i%len(keys)] {
			p := filepath.Join(dir, f.name)
			if err := os.WriteFile(p, f.data, f.mode); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, mtime, mtime)
		}
	}
}

// Every command works on a sessions root of 10,000 keys (1,000 under the
// race detector), stats checked as statsOnGenerated says; the figures are
// logged (go test -run TestTenThousandKeys -v ./cmd/sessdb). Set
// SESSDB_10K_DIR to a path that does not exist to keep the generated root
// there, unreaped, for timing the binary.
func TestTenThousandKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 keys: not in -short")
	}
	atSampleTime(t)
	root := filepath.Join(t.TempDir(), "sessions")
	if d := os.Getenv("SESSDB_10K_DIR"); d != "" {
		root = d
	}
	n := 10000
	if raceBuild {
		n = 1000
	}
	start := time.Now()
	genSessions(t, root, n)
	t.Logf("generated %d keys in %v", n, time.Since(start).Round(time.Millisecond))

	before := fingerprint(t, root)
	timed := func(args ...string) (int, string, time.Duration) {
		start := time.Now()
		code, out, errs := runCLI(t, append(args, root)...)
		d := time.Since(start)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		t.Logf("%-40s %8v  %6.0f keys/s", strings.Join(args, " "), d.Round(time.Millisecond), float64(n)/d.Seconds())
		return code, out, d
	}
	_, out, _ := timed("dump", "--json", "--history", "0")
	if got := strings.Count(out, "\n"); got != n+2 {
		t.Fatalf("dump --json printed %d lines for %d keys, README.txt and the summary", got, n)
	}
	_, out, _ = timed("dump", "--history", "0")
	if got := strings.Count(out, "\n"); got != n+2 {
		t.Fatalf("the table has %d lines", got)
	}
	timed("dump", "--json", "--verify", "--history", "0")
	statsOnGenerated(t, root, n)
	_, out, _ = timed("check")
	if want := fmt.Sprintf("checked %d entries (%d keys): 0 problems, %d notices\n", n+1, n, n/5+1); !strings.HasSuffix(out, want) {
		t.Fatalf("check of the generated root ends:\n%s", out[max(0, len(out)-300):])
	}
	_, out, _ = timed("reap", "--dry-run")
	if want := fmt.Sprintf("would reap %d keys and 0 temp files; kept %d keys, skipped 1", n/5, n-n/5); !strings.Contains(out, want) {
		t.Fatalf("reap --dry-run ends:\n%s", out[max(0, len(out)-300):])
	}
	if after := fingerprint(t, root); after != before {
		t.Fatal("dump, check or reap --dry-run changed the generated root")
	}
	if os.Getenv("SESSDB_10K_DIR") != "" {
		return // kept for timing: not reaped
	}
	_, out, _ = timed("reap")
	if want := fmt.Sprintf("reaped %d keys and 0 temp files; kept %d keys", n/5, n-n/5); !strings.Contains(out, want) {
		t.Fatalf("reap ends:\n%s", out[max(0, len(out)-300):])
	}
}
