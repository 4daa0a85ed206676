package callerctx

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Deadline reads a held caller's deadline through Value, which
// context.WithoutCancel passes on: a step the store finishes whatever its
// caller does, detached with context.WithoutCancel, would stop trying an
// etcd that did not answer at the caller's deadline (a reap's delete and
// a repair's renumber reported not done though they had landed: 79fd00d).
// So no code of the module but this package's calls it: WithoutCancel
// here is the one to call.
func TestNoCodeDetachesAContextButWithoutCancelHere(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root is not two levels up: %v", err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if abs, _ := filepath.Abs(p); abs == self || p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "context.WithoutCancel(") {
			bad = append(bad, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("context.WithoutCancel called in %v: call callerctx.WithoutCancel, which Deadline does not read the caller's deadline through", bad)
	}
}
