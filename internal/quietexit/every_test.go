package quietexit

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every package of the module with tests ends its test binary with Exit,
// itself or through etcdtest.Main, so that no passing -race run of it
// sleeps the race detector's second at its exit. Measured on a2671bd,
// every package whose TestMain ended with os.Exit, or that had none (go
// test's own ends so), waited 1.0 to 1.7 s between its PASS and its exit,
// 27 of them, though no test of theirs left a goroutine; with Exit, 0.002
// to 0.2 s. This package is the one left out: its parent exits by os.Exit
// (exit_test.go's TestMain), so that an Exit that hid a failed run is seen.
func TestEveryPackageEndsItsTestsWithExit(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	ends := regexp.MustCompile(`(?m)^[^/\n]*\b(quietexit\.Exit|etcdtest\.Main)\(|\{ Main\(m\) \}`)
	tests := map[string]bool{} // dir -> it ends with Exit
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.Dir(p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tests[dir] = tests[dir] || ends.Match(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 30 {
		t.Fatalf("found the tests of %d packages under %s; want the module's (30 or more)", len(tests), root)
	}
	for dir, quiet := range tests {
		if !quiet && dir != self {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: no test file ends the binary with quietexit.Exit or etcdtest.Main: a passing -race run sleeps 1 s at its exit (add TestMain(m *testing.M) { quietexit.Exit(m.Run()) })", rel)
		}
	}
}
