package sharedtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestSharedData says how many of the module's tests need
// ../shared/testdata: those that reach Dir or Locate, directly or through
// a helper of their own package. Without the folder each of them skips,
// saying why; this test counts them, so that the README's figure is the
// tests' own.
func TestSharedData(t *testing.T) {
	root := ModuleRoot()
	if root == "" {
		t.Fatal("no go.mod above the working directory")
	}
	tests, err := sharedTests(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatal("no test reaches sharedtest: the count would prove nothing")
	}
	for _, name := range tests {
		t.Log(name)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	said := regexp.MustCompile(`lists them:\s+(\d+) tests`).FindSubmatch(readme)
	if said == nil || string(said[1]) != strconv.Itoa(len(tests)) {
		t.Errorf("README.md must say how many tests read ../shared/testdata (\"lists them: %d tests\"); it says %q", len(tests), said)
	}
	if Locate("pi-fixtures") == "" || Locate("pi") == "" {
		t.Skipf("../shared/testdata is absent: %d tests skip, whole or in the cases that need it (listed above with -v)", len(tests))
	}
	t.Logf("../shared/testdata is present: %d tests use it", len(tests))
}

// sharedTests lists, as "package/TestName", the Test, Example and Fuzz
// functions of the module that call Dir or Locate, or call (by name) a
// function of their package that does, however deep.
func sharedTests(root string) ([]string, error) {
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		byDir[filepath.Dir(p)] = append(byDir[filepath.Dir(p)], f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for dir, files := range byDir {
		calls := map[string]map[string]bool{} // function -> names it calls
		for _, f := range files {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil || fn.Recv != nil {
					continue
				}
				called := map[string]bool{}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					switch c := n.(type) {
					case *ast.SelectorExpr:
						if x, ok := c.X.(*ast.Ident); ok && x.Name == "sharedtest" {
							called["sharedtest."+c.Sel.Name] = true
						}
					case *ast.Ident:
						called[c.Name] = true
					}
					return true
				})
				calls[fn.Name.Name] = called
			}
		}
		reaches := map[string]bool{}
		for changed := true; changed; {
			changed = false
			for fn, called := range calls {
				if reaches[fn] {
					continue
				}
				for c := range called {
					if c == "sharedtest.Dir" || c == "sharedtest.Locate" || (reaches[c] && c != fn) {
						reaches[fn], changed = true, true
						break
					}
				}
			}
		}
		rel, _ := filepath.Rel(root, dir)
		for fn := range reaches {
			// Benchmarks read it too, but go test does not run them.
			if strings.HasPrefix(fn, "Test") || strings.HasPrefix(fn, "Example") || strings.HasPrefix(fn, "Fuzz") {
				out = append(out, rel+"/"+fn)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
