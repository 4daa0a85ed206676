package faults

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// Every Point of faults.go is a name of its own: a test arms a point by
// its name, and two points of one name are one point, armed at both
// places at once (a test of one step fails at the other first, or
// passes without reaching its own). Nothing else checks it: the tests
// address a point by its constant, so that FleetMigrateChecksum made
// "fleet-migrate/legacy-lstat" passed them all.
func TestEveryPointHasANameOfItsOwn(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "faults.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{} // point name -> its constant
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Point" {
				continue
			}
			for i, n := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: a Point that is no string literal", n.Name)
					continue
				}
				name, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				if other, dup := byName[name]; dup {
					t.Errorf("%s and %s are both %q: one point", other, n.Name, name)
				}
				byName[name] = n.Name
			}
		}
	}
	if len(byName) < 50 {
		t.Fatalf("found %d points in faults.go; want its points (more than 50)", len(byName))
	}
}
