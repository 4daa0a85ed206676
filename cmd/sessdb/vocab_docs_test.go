package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sessdb/gates"
)

// A closed vocabulary of tokens the CLI prints: where its constants are
// declared, and which lines of the docs must name each one.
type vocabulary struct {
	name string
	dir  string // package dir, relative to the repository
	// pick selects a constant by its declaration's doc comment, its
	// type as written ("Kind", "store.Kind") and its name.
	pick func(doc, typ, name string) bool
	docs []string // what docs must name each token: docRow or docSection results
	min  int      // constants there are at least: fewer means they moved
}

// vocabTokens parses the non-test Go files of dir and returns the string
// value of every constant pick selects.
func vocabTokens(t *testing.T, dir string, pick func(doc, typ, name string) bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			doc := g.Doc.Text()
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				switch x := vs.Type.(type) {
				case *ast.Ident:
					typ = x.Name
				case *ast.SelectorExpr:
					typ = x.X.(*ast.Ident).Name + "." + x.Sel.Name
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) || !pick(doc, typ, n.Name) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, v)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// docRow returns the meaning of field in json.md's table for object.
func docRow(t *testing.T, object, field string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "### ") {
			in = line == "### `"+object+"`"
			continue
		}
		if in && strings.HasPrefix(line, "| `"+field+"` |") {
			return line
		}
	}
	t.Fatalf("docs/json.md has no row %s.%s", object, field)
	return ""
}

// docSection returns the text of a doc's "## heading" section.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", file, heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Each closed vocabulary the CLI prints (a run's shape, check's kinds,
// reap's and migrate's actions, verify's results, the history's outcomes)
// is named token by token where worker code looks it up: a token added in
// code without its doc row (as run's "unknown" had to be added by hand to
// four docs) fails here. The tokens are read from the constants'
// declarations, so a new constant is checked without touching this test.
func TestDocsNameEveryTokenOfEachVocabulary(t *testing.T) {
	root := filepath.Join("..", "..")
	typed := func(want ...string) func(doc, typ, name string) bool {
		return func(_, typ, _ string) bool {
			for _, w := range want {
				if typ == w {
					return true
				}
			}
			return false
		}
	}
	byDoc := func(prefix string) func(doc, typ, name string) bool {
		return func(doc, _, _ string) bool { return strings.HasPrefix(doc, prefix) }
	}
	checkFinds := docSection(t, "docs/operations.md", "What check finds")
	for _, v := range []vocabulary{
		{"run shapes", "store/transcript", typed("Shape"), []string{docRow(t, "promote", "run"), docRow(t, "stats.run", "run"), docRow(t, "dump.history", "run")}, 5},
		{"check kinds", "store", typed("Kind"), []string{checkFinds}, 20},
		{"fleet check kinds", "fleet", typed("store.Kind"), []string{checkFinds}, 1},
		{"migrate actions", "migrate", typed("Action"), []string{docRow(t, "migrate.report", "action")}, 5},
		{"fleet migrate actions", "fleet", typed("migrate.Action"), []string{docRow(t, "migrate.report", "action")}, 1},
		{"reap actions", "cmd/sessdb", byDoc("Reap's actions"), []string{docRow(t, "reap.action", "action")}, 8},
		{"verify results", "store", byDoc("Verify results"), []string{docRow(t, "dump.verify", "result")}, 6},
		{"history outcomes", "store", func(_, _, name string) bool { return strings.HasSuffix(strings.ToLower(name), "outcome") }, []string{docRow(t, "dump.history", "outcome")}, 2},
	} {
		toks := vocabTokens(t, filepath.Join(root, v.dir), v.pick)
		if len(toks) < v.min {
			t.Errorf("%s: %d tokens found in %s: the constants moved, and this test reads nothing", v.name, len(toks), v.dir)
		}
		for _, tok := range toks {
			for _, d := range v.docs {
				if !strings.Contains(d, "`"+tok+"`") {
					t.Errorf("%s: %q is not named in %.60q…", v.name, tok, strings.TrimSpace(d))
				}
			}
		}
	}
	// README's two tables (the ladder and promote's outcomes) name every
	// reason token resolve and promote print.
	readme := docSection(t, "README.md", "Reasons")
	for _, r := range gates.Reasons() {
		if !strings.Contains(readme, "| `"+string(r)+"` |") {
			t.Errorf("README's reasons tables have no row for %s", r)
		}
	}
}
