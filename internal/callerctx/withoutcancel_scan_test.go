package callerctx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Deadline reads a held caller's deadline through Value, which
// context.WithoutCancel passes on: a step the store finishes whatever its
// caller does, detached with context.WithoutCancel, would stop trying an
// etcd that did not answer at the caller's deadline (a reap's delete and
// a repair's renumber reported not done though they had landed: 79fd00d).
// So no code of the module but this package's uses it: WithoutCancel
// here is the one to call. The scan reads each non-test file of every
// package as Go, whatever its build tags, so that the standard one is
// found however it is reached: called, taken as a value, or through the
// context package imported under another name or with a dot.
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
	files := 0
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
		files++
		bad = append(bad, detaches(t, p)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d non-test files; the module has hundreds: the walk missed them", files)
	}
	if len(bad) > 0 {
		t.Errorf("context.WithoutCancel used at %v: call callerctx.WithoutCancel, which Deadline does not read the caller's deadline through", bad)
	}
}

// detaches returns where the Go file at p uses the standard library's
// context.WithoutCancel.
func detaches(t *testing.T, p string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", p, err)
	}
	var names []string // what the file calls package context
	var at []string
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path != "context" {
			continue
		}
		switch {
		case imp.Name == nil:
			names = append(names, "context")
		case imp.Name.Name == ".":
			at = append(at, fset.Position(imp.Pos()).String()+" (a dot import of context)")
		case imp.Name.Name != "_":
			names = append(names, imp.Name.Name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "WithoutCancel" {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			for _, name := range names {
				if x.Name == name {
					at = append(at, fset.Position(sel.Pos()).String())
				}
			}
		}
		return true
	})
	return at
}
