package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneValidatorIdiom fails naming each production function that returns the domain's
// field errors (jobs.FieldError, *jobs.FieldError, []jobs.FieldError, jobs.FieldErrors)
// and each literal of them outside jobs/errors.go (CONTRIBUTING.md, "A validator takes
// errs *jobs.FieldErrors"): a validator records its problems with errs.Add in the
// caller's collector. client/ and session/ have field error types of their own, which
// this leaves alone.
func TestOneValidatorIdiom(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for _, rel := range productionFiles(t) {
		if rel == "jobs/errors.go" {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", rel, err)
		}
		inJobs := f.Name.Name == "jobs" && strings.HasPrefix(rel, "jobs/")
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Type.Results == nil {
					return true
				}
				for _, r := range x.Type.Results.List {
					if isFieldErrors(r.Type, inJobs) {
						t.Errorf("%s: %s returns field errors: take errs *jobs.FieldErrors and call errs.Add",
							fset.Position(x.Pos()), funcName(x))
					}
				}
			case *ast.CompositeLit:
				if x.Type != nil && isFieldErrors(x.Type, inJobs) {
					t.Errorf("%s: a field error literal: record it with errs.Add on a jobs.FieldErrors", fset.Position(x.Pos()))
				}
			}
			return true
		})
	}
}

// isFieldErrors reports whether e is FieldError or FieldErrors of package jobs, or a
// pointer to or slice of one (unqualified only in package jobs itself).
func isFieldErrors(e ast.Expr, inJobs bool) bool {
	switch x := e.(type) {
	case *ast.StarExpr:
		return isFieldErrors(x.X, inJobs)
	case *ast.ArrayType:
		return isFieldErrors(x.Elt, inJobs)
	case *ast.Ident:
		return inJobs && (x.Name == "FieldError" || x.Name == "FieldErrors")
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return ok && pkg.Name == "jobs" && (x.Sel.Name == "FieldError" || x.Sel.Name == "FieldErrors")
	}
	return false
}
