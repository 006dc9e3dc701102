package house

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// maxFuncLines is the longest a production function may be, from its func line to its
// closing brace (CONTRIBUTING.md, "No production function over 60 lines").
const maxFuncLines = 60

// TestNoLongFunctions fails naming each production function over maxFuncLines lines.
func TestNoLongFunctions(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for _, rel := range productionFiles(t) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", rel, err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			n := end.Line - start.Line + 1
			if n <= maxFuncLines {
				continue
			}
			t.Errorf("%s:%d: %s is %d lines, over %d: split it into named steps", rel, start.Line, funcName(fd), n, maxFuncLines)
		}
	}
}

// productionFiles lists the module's non-test Go files relative to the root, with forward
// slashes; bench/, tests/e2e, testdata, hidden directories and node_modules are skipped.
func productionFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" ||
				rel == "bench" || rel == "tests/e2e") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	return files
}

// funcName is a declaration's name as the code reads it: Name, or (Recv).Name and
// (*Recv).Name for a method (type parameters left out).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		star, typ = "*", s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	name := fmt.Sprint(typ)
	if id, ok := typ.(*ast.Ident); ok {
		name = id.Name
	}
	return fmt.Sprintf("(%s%s).%s", star, name, fd.Name.Name)
}
