package faults

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package doc's promise, "a program that uses sessdb cannot arm a
// fault", holds while only test files call Set (or Line, which calls it):
// a non-test file that does (an exported helper of a public package, say)
// lets any program arm one.
func TestOnlyTestFilesArm(t *testing.T) {
	const self = "sessdb/internal/faults"
	var armers []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		case filepath.Dir(path) == ".":
			return nil // this package's own Set
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		name := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == self {
				name = "faults"
				if im.Name != nil {
					name = im.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && (s.Sel.Name == "Set" || s.Sel.Name == "Line") {
				if x, ok := s.X.(*ast.Ident); ok && x.Name == name {
					armers = append(armers, path)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(armers) > 0 {
		t.Fatalf("non-test files arm faults (faults.Set, faults.Line), which a program using sessdb could then reach: %v", armers)
	}
}
